"""minimax_h3_nvfp4: the MiniMax-H3 NVFP4 (W4A4) attention-output projection with its fused
gated-residual epilogue, with FlashInfer's `diffusion_ops` API.

    from minimax_h3_nvfp4.diffusion_ops import (
        minimax_h3_nvfp4_out_proj, quantize_minimax_h3_o_weight_nvfp4)
    from minimax_h3_nvfp4 import MiniMaxH3NVFP4OutProj        # the nn.Module (needs torch)

CUDA torch tensors run the GPU kernel; CPU torch tensors and NumPy arrays run the bit-exact CPU
emulator (torch is optional). The contract, to the bit: docs/contract.md of the source tree.
"""

from . import bf16
from . import calibration
from .diffusion_ops import (backend_name, minimax_h3_nvfp4_out_proj,
                            quantize_minimax_h3_o_weight_nvfp4)

# The project's version: core/version.h (H3_VERSION) says the same, and api_test checks it.
__version__ = "0.1.0"

__all__ = ["MiniMaxH3NVFP4OutProj", "backend_name", "bf16", "calibration",
           "minimax_h3_nvfp4_out_proj", "quantize_minimax_h3_o_weight_nvfp4", "library_path"]


def library_path():
    """The path of the loaded libminimax_h3_nvfp4.so."""
    from . import _native
    return _native.lib().path


def __getattr__(name):
    # The nn.Module needs torch: imported on first use only.
    if name == "MiniMaxH3NVFP4OutProj":
        from .modules import MiniMaxH3NVFP4OutProj
        return MiniMaxH3NVFP4OutProj
    raise AttributeError("module 'minimax_h3_nvfp4' has no attribute %r" % (name,))
