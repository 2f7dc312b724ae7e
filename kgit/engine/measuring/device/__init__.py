"""What a measurement runs on, held and probed: the per-device measuring lock that keeps two
kgit processes from timing on one device at once (`devicelock.py`), and the probe of the
interpreter the gate and the harness start, its start-up files fingerprinted where they cannot
be isolated, and the host a note records (`pyenv.py`)."""
