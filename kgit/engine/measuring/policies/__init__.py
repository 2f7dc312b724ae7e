"""The decision policies and the validation that runs one: the `Policy` protocol and the lookup
in kgit/records/policies.py's table (`policy.py`), the shipped policies (`policy_seed.py`;
`policy_interleaved.py` over the A/B sampling of `interleaved.py` and the baseline's A/A
`calibration.py`), what a validation compares and returns (`target.py`), and the one
validation path of validate, finish and accept's replay (`validation.py`)."""
