# Vendored subset (kgit test fixture): upstream's utils.py also probes Ascend NPUs (through
# torch_npu); only infer_device is kept, without the NPU branch.
import torch


def infer_device():
    """
    Get current device name based on available devices
    """
    if torch.cuda.is_available():  # Works for both Nvidia and AMD
        return "cuda"
    # XPU (Intel) if available
    elif torch.xpu.is_available():
        return "xpu"
    else:
        return "cpu"
