"""minimax_h3_nvfp4: the MiniMax-H3 NVFP4 (W4A4) attention-output projection with its fused
gated-residual epilogue, with FlashInfer's `diffusion_ops` API.

    from minimax_h3_nvfp4.diffusion_ops import (
        minimax_h3_nvfp4_out_proj, quantize_minimax_h3_o_weight_nvfp4)
    from minimax_h3_nvfp4 import MiniMaxH3NVFP4OutProj        # the nn.Modules (need torch)
    from minimax_h3_nvfp4 import NVFP4GatedResidualLinear

CUDA torch tensors run the GPU kernel; CPU torch tensors and NumPy arrays run the bit-exact CPU
emulator (torch is optional). `python -m minimax_h3_nvfp4 info | selftest | tune | bench` is
the command line. The contract, to the bit: docs/contract.md of the source tree.
"""

from . import bf16
from . import calibration
from .diffusion_ops import (backend_name, minimax_h3_nvfp4_out_proj,
                            quantize_minimax_h3_o_weight_nvfp4, stall_report)

# The project's version: core/version.h (H3_VERSION) says the same; api_test checks it, and the
# wheel builder (python/wheel.py) refuses to build when they differ.
__version__ = "0.1.0"

# The nn.Modules need torch: imported on first use (__getattr__), and named in __all__ only
# where torch is importable, so that `from minimax_h3_nvfp4 import *` works without it.
_TORCH_NAMES = ("MiniMaxH3NVFP4OutProj", "NVFP4GatedResidualLinear")

__all__ = ["backend_name", "bf16", "calibration", "library_path", "stall_report",
           "minimax_h3_nvfp4_out_proj", "quantize_minimax_h3_o_weight_nvfp4", "tune"]


def _torch_importable():
    try:
        import torch  # noqa: F401  (imported by diffusion_ops already where it exists)
    except ImportError:
        return False
    return True


if _torch_importable():
    __all__ += list(_TORCH_NAMES)


def library_path():
    """The path of the loaded libminimax_h3_nvfp4.so."""
    from . import _native
    return _native.lib().path


def tune(*args, **kwargs):
    """Times every registered tile config on a CUDA device and records the winners in the
    tuning cache (minimax_h3_nvfp4.autotune.tune; needs torch with CUDA)."""
    from . import autotune
    return autotune.tune(*args, **kwargs)


def __getattr__(name):
    if name in _TORCH_NAMES:
        from . import modules
        return getattr(modules, name)
    raise AttributeError("module 'minimax_h3_nvfp4' has no attribute %r" % (name,))
