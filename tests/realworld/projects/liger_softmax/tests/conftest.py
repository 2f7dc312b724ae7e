"""Test set-up for a machine without a GPU (kgit's addition, not upstream's).

Triton reads TRITON_INTERPRET when a kernel is decorated, so it is set here, before any test
module imports liger_kernel: on a CPU the kernels then run in Triton's interpreter.
"""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
