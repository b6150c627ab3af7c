"""The torch custom op `minimax_h3_nvfp4::out_proj` (imported only where torch is).

An internal op that takes every operand of the table (core/operands.def, _operands.py) but the
GPU's ready-flag workspace, in its order - `out`, `act_q`, `act_sf` allocated by the Python
wrapper (diffusion_ops) when the caller gave none - mutates the outputs and returns nothing; the
public function returns `out`. Its signature is written from the table (_signature). Registered with
torch.library.custom_op (torch >= 2.4) with a
fake implementation, so torch.compile(fullgraph=True) traces through it; on older torch,
`out_proj` is the plain implementation (no registration).

The implementation resolves tile="auto" for CUDA tensors (tuning.py asks the library: the
tuning cache, else a heuristic) and runs the GPU kernel, on torch.cuda.current_stream(), with
its per-call ready-flag workspace from torch's allocator (so a CUDA graph's memory stays in
torch's pool, and nothing in the call synchronizes: the very first call in a process can be
captured), or the emulator for CPU tensors. `residual=None` means "in place": `out` holds the
residual (no two arguments of the op alias each other).
"""

import ctypes
import keyword
from typing import Optional

import torch

from . import _native
from . import _operands
from . import tuning

_NAME = "minimax_h3_nvfp4::out_proj"

# Calls run by each route in this process (tests, `bench --first-call`): "op" counts runs of
# _impl below (the registered op's implementation, or the plain one on torch < 2.4), "fast"
# the eager fast path's calls (_eager.py); "tile": the tile code the last GPU call ran with
# (tile="auto" resolved), absent before one.
stats = {"fast": 0, "op": 0}


# The op's arguments, from the operand table (core/operands.def): every operand but the GPU's
# ready-flag workspace (allocated below), each OR_VALUE operand followed by its host value, then
# the options. OPERAND_NAMES: the tensors, in this order.
OPERAND_NAMES = tuple(o.name for o in _operands.OPERANDS if o.dtype != "FLAGS")
_VALUE_NAMES = tuple(o.name + "_value" for o in _operands.OPERANDS if o.presence == "OR_VALUE")
_OPTIONS = ("sm90_emulation", "cpu_gemm", "tile")
_MUTATED = tuple(o.name for o in _operands.OPERANDS if o.role != "IN" and o.dtype != "FLAGS")


def _arr(t):
    if t is None:
        return _native.H3Array()
    return _native.make_array(t.data_ptr(), tuple(t.shape))


def _impl(*args):
    """The op on args in the order of _signature(): tensors, host values, options."""
    stats["op"] += 1
    lib = _native.lib()
    n = len(OPERAND_NAMES)
    tensors = dict(zip(OPERAND_NAMES, args[:n]))
    values = dict(zip(_VALUE_NAMES, args[n:n + len(_VALUE_NAMES)]))
    sm90_emulation, cpu_gemm, tile = args[n + len(_VALUE_NAMES):]
    a = _native.new_args(_arr, **tensors)
    for name, v in values.items():
        setattr(a, name, v)
    a.sm90_emulation = sm90_emulation
    a.cpu_gemm = cpu_gemm
    a.tile = tile
    attn_out, o_weight_q = tensors["attn_out"], tensors["o_weight_q"]
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


def _signature():
    """The registered op's Python signature, annotated as custom_op infers the schema from:
    "attn_out: torch.Tensor, ..., o_weight_global_scale_value: float, ..., tile: int"."""
    params = []
    for o in _operands.OPERANDS:
        if o.dtype == "FLAGS":
            continue
        params.append("%s: %s" % (o.name, "torch.Tensor" if o.presence == "REQUIRED"
                                  else "Optional[torch.Tensor]"))
    params += ["%s: float" % n for n in _VALUE_NAMES]
    params += ["%s: int" % n for n in _OPTIONS]
    return params


def _register():
    custom_op = getattr(getattr(torch, "library", None), "custom_op", None)
    if custom_op is None:  # torch < 2.4
        return _impl
    # A function with the table's parameters (custom_op reads the schema from its signature),
    # written out once here rather than by hand.
    params = [p.split(":")[0] for p in _signature()]
    for p in params:  # the table's names become Python parameters: they must be plain names
        if not p.isidentifier() or keyword.iskeyword(p) or p in ("torch", "Optional", "_impl"):
            raise ImportError("minimax_h3_nvfp4: operand %r cannot be a parameter name" % p)
    names = ", ".join(params)
    ns = {}
    exec("def out_proj(%s) -> None:\n    _impl(%s)\n\n"
         "def fake(%s) -> None:\n    return None\n" % (", ".join(_signature()), names,
                                                       ", ".join(_signature())),
         {"__name__": __name__, "torch": torch, "Optional": Optional, "_impl": _impl}, ns)
    try:
        out_proj = custom_op(_NAME, mutates_args=_MUTATED)(ns["out_proj"])
        out_proj.register_fake(ns["fake"])
        return out_proj
    except RuntimeError:
        # Already registered in this process (a second copy of the package was imported): use
        # that registration.
        return torch.ops.minimax_h3_nvfp4.out_proj.default


out_proj = _register()
registered = out_proj is not _impl
