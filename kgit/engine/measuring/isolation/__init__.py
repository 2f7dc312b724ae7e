"""The sealed world a measuring process runs in: the environment kgit builds for each process
rather than inherits, with a copy of kgit's measuring code (`world.py`), the folders no
measuring process may write, walked after it ran (`watch.py`), and the sealed measurement that
holds the device and keeps that watch around the harness's and the gate's runs (`sealed.py`)."""
