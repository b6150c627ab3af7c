"""The torch custom op `minimax_h3_nvfp4::out_proj` (imported only where torch is).

An internal op that takes every buffer - `out`, `act_q`, `act_sf`, allocated by the Python
wrapper (diffusion_ops) when the caller gave none - mutates them and returns nothing; the
public function returns `out`. Registered with torch.library.custom_op (torch >= 2.4) with a
fake implementation, so torch.compile(fullgraph=True) traces through it; on older torch,
`out_proj` is the plain implementation (no registration).

The implementation resolves tile="auto" for CUDA tensors (tuning.py: the tuning cache, else a
heuristic) and runs the GPU kernel, on torch.cuda.current_stream(), with
its per-call ready-flag workspace from torch's allocator (so a CUDA graph's memory stays in
torch's pool, and nothing in the call synchronizes: the very first call in a process can be
captured), or the emulator for CPU tensors. `residual=None` means "in place": `out` holds the
residual (no two arguments of the op alias each other).
"""

import ctypes
from typing import Optional

import torch

from . import _native
from . import tuning

_NAME = "minimax_h3_nvfp4::out_proj"

# Calls run by each route in this process (tests, `bench --first-call`): "op" counts runs of
# _impl below (the registered op's implementation, or the plain one on torch < 2.4), "fast"
# the eager fast path's calls (_eager.py); "tile": the tile code the last GPU call ran with
# (tile="auto" resolved), absent before one.
stats = {"fast": 0, "op": 0}


def _arr(t):
    if t is None:
        return _native.H3Array()
    return _native.make_array(t.data_ptr(), tuple(t.shape))


def _impl(attn_out, o_weight_q, o_weight_sf, o_weight_global_scale, o_weight_global_scale_value,
          act_global_scale, gate, gate_index, residual, out, act_q, act_sf, sm90_emulation,
          cpu_gemm, tile):
    stats["op"] += 1
    lib = _native.lib()
    a = _native.new_args(
        _arr, attn_out=attn_out, o_weight_q=o_weight_q, o_weight_sf=o_weight_sf,
        o_weight_global_scale=o_weight_global_scale, act_global_scale=act_global_scale,
        gate=gate, gate_index=gate_index, residual=residual, out=out, act_q=act_q, act_sf=act_sf)
    a.o_weight_global_scale_value = o_weight_global_scale_value
    a.sm90_emulation = sm90_emulation
    a.cpu_gemm = cpu_gemm
    a.tile = tile
    device = attn_out.device
    if device.type == "cuda":
        m = attn_out.shape[0] if attn_out.dim() >= 1 else 0
        index = device.index if device.index is not None else torch.cuda.current_device()
        if tile == _native.tiles()["auto"] and attn_out.dim() == 2 and o_weight_q.dim() == 2:
            # Resolved here, inside the op, so that torch.compile never traces the cache's
            # file reading; a dict lookup after the first call of a shape (tuning.py).
            a.tile = tuning.resolve(index, int(m), int(o_weight_q.shape[0]),
                                    int(attn_out.shape[1]),
                                    "fast" if sm90_emulation == 1 else "faithful")
        stats["tile"] = a.tile
        flags = torch.empty((lib.h3_ready_flag_bytes(m),), dtype=torch.uint8, device=device)
        a.ready_flags = _arr(flags)
        a.device = index
        stream = torch.cuda.current_stream(device).cuda_stream
        _native.check(lib.h3_out_proj_gpu(ctypes.byref(a), ctypes.c_void_p(stream)))
        # `flags` is returned to torch's caching allocator here: stream-ordered on the current
        # stream, which is the stream the op was enqueued on.
    elif device.type == "cpu":
        _native.check(lib.h3_out_proj_cpu(ctypes.byref(a)))
    else:
        raise ValueError("minimax_h3_nvfp4_out_proj: attn_out must be a CUDA or CPU tensor, "
                         "got %s" % (device,))


def _register():
    custom_op = getattr(getattr(torch, "library", None), "custom_op", None)
    if custom_op is None:  # torch < 2.4
        return _impl
    try:
        @custom_op(_NAME, mutates_args=("out", "act_q", "act_sf"))
        def out_proj(attn_out: torch.Tensor, o_weight_q: torch.Tensor,
                     o_weight_sf: torch.Tensor, o_weight_global_scale: Optional[torch.Tensor],
                     o_weight_global_scale_value: float, act_global_scale: torch.Tensor,
                     gate: torch.Tensor, gate_index: torch.Tensor,
                     residual: Optional[torch.Tensor], out: torch.Tensor,
                     act_q: Optional[torch.Tensor], act_sf: Optional[torch.Tensor],
                     sm90_emulation: int, cpu_gemm: int, tile: int) -> None:
            _impl(attn_out, o_weight_q, o_weight_sf, o_weight_global_scale,
                  o_weight_global_scale_value, act_global_scale, gate, gate_index, residual, out,
                  act_q, act_sf, sm90_emulation, cpu_gemm, tile)

        @out_proj.register_fake
        def _(attn_out, o_weight_q, o_weight_sf, o_weight_global_scale,
              o_weight_global_scale_value, act_global_scale, gate, gate_index, residual, out,
              act_q, act_sf, sm90_emulation, cpu_gemm, tile):
            return None

        return out_proj
    except RuntimeError:
        # Already registered in this process (a second copy of the package was imported): use
        # that registration.
        return torch.ops.minimax_h3_nvfp4.out_proj.default


out_proj = _register()
registered = out_proj is not _impl
