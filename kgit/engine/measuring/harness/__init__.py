"""One pass of the quick harness and what is read from it: the pass run sealed and its CSV
checked against the frozen schema, with the fingerprint a comparison requires and the device's
reasons a verdict must give (`passes.py`), its shapes' precision against the baseline's
(`baseline_snrs.py`), the rates it shows against the device's peaks, the physical floor's
inputs (`physical_floor.py`), and the kernels a command launches, for the gate audit
(`launches.py`)."""
