"""Measuring: the harness's passes, the two measuring sides, the device lock, the decision policies and what a validation measures."""
