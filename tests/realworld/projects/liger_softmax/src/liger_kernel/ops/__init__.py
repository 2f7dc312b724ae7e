# Vendored subset (kgit test fixture): upstream's ops/__init__.py re-exports every op of the
# library; only the softmax is vendored here.
from liger_kernel.ops.softmax import LigerSoftmaxFunction  # noqa: F401
