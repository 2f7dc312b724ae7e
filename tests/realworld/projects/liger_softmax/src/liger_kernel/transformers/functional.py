# Vendored subset (kgit test fixture): upstream's functional.py wraps every op of the library;
# only the softmax's wrapper is kept, as upstream wrote it.
from liger_kernel.ops.softmax import LigerSoftmaxFunction


def liger_softmax(x):
    return LigerSoftmaxFunction.apply(x)
