# Vendored subset (kgit test fixture): upstream's functional.py wraps every op of the library;
# only the SwiGLU's wrapper is kept, as upstream wrote it.
from liger_kernel.ops.swiglu import LigerSiLUMulFunction


def liger_swiglu(a, b):
    return LigerSiLUMulFunction.apply(a, b)
