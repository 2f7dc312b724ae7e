"""Measuring: a candidate timed against a reference, in five rooms from the ground up (each
imports only its own and those below it: tests/test_layers.py holds the order): `device/` (the
device lock, the interpreter probe), `isolation/` (the sealed world a measuring process runs
in), `harness/` (one checked pass of the harness and what is read from it), `sides/` (the two
sides of a comparison, their processes and trees) and `policies/` (the decision policies and
the validation that runs one)."""
