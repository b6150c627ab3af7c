"""FlashInfer's `diffusion_ops` API for the MiniMax-H3 NVFP4 attention-output projection.

    from minimax_h3_nvfp4.diffusion_ops import (
        minimax_h3_nvfp4_out_proj, quantize_minimax_h3_o_weight_nvfp4)

Same names, argument order, keyword-only part, defaults and return values as
`flashinfer.diffusion_ops`; the contract, to the bit, is docs/contract.md. Three keyword-only
extras follow FlashInfer's own (so its signature is a prefix of this one):

    sm90_emulation="faithful" | "fast"   which exact emulation of the SM120 block-scaled MMA runs
                                         on an sm_90 GPU (README "On Hopper"); ignored elsewhere
    cpu_gemm="fast" | "exact"            the emulator's GEMM: Eigen f32 (within the contract's
                                         bound) or the exact accumulator rounded once
    tile="auto" | a registered name      the SM120 kernel's config, from the library's registry
                                         (kernels/device/tiles.h; today "128x256_lockstep",
                                         "128x256", "128x128", "128x128_staged", the
                                         default); all compute the
                                         same bits, they differ in speed only. "auto": the
                                         tuning cache's winner for this device, shape and M,
                                         else a heuristic (kernels/tuning/tune_cache.h, asked
                                         through tuning.py; `python -m
                                         minimax_h3_nvfp4 tune`);
                                         ignored by the emulator and the fast sm_90 build

then the quality options act_smooth, lora_down, lora_up (None: off; docs/contract.md sections
12-13; the op's docstring), which both backends compute.

The backend follows the tensors: CUDA torch tensors run the GPU kernel on
torch.cuda.current_stream() (SM12x native, sm_90 validation build); CPU torch tensors and NumPy
arrays run the bit-exact CPU emulator. NumPy has no bf16: bf16 operands are uint16 bit patterns
or ml_dtypes.bfloat16 arrays (minimax_h3_nvfp4.bf16 converts). torch is optional.

Errors, raised before anything runs (nothing is written): TypeError for a wrong type or dtype;
ValueError for a wrong shape (more than 4 dimensions included), mismatched devices,
non-contiguous operands, forbidden aliasing (only out is residual exactly is allowed) or an
invalid value; RuntimeError for CUDA errors, a machine without a usable NVIDIA driver and GPU,
and unsupported devices. Messages read "minimax_h3_nvfp4_out_proj: <arg> must be <expected>,
got <given>", as the C++ validation words them.
"""

import ctypes
import numbers

import numpy as np

from . import _native
from . import _operands
from . import bf16 as _bf16

try:
    import torch as _torch
except ImportError:  # NumPy-only machines: the emulator backend alone
    _torch = None

__all__ = ["minimax_h3_nvfp4_out_proj", "quantize_minimax_h3_o_weight_nvfp4", "backend_name",
           "stall_report"]

_OP = "minimax_h3_nvfp4_out_proj"
_QUANTIZER = "quantize_minimax_h3_o_weight_nvfp4"
_SM90_EMULATION = {"faithful": 0, "fast": 1}
_CPU_GEMM = {"fast": 0, "exact": 1}


def _msg(fn, arg, expected, got):
    return "%s: %s must be %s, got %s" % (fn, arg, expected, got)


def _kind_of(x):
    """How a value is named in messages: 'torch.Tensor on cuda:0', 'numpy.ndarray', 'float'..."""
    if _torch is not None and isinstance(x, _torch.Tensor):
        return "torch.Tensor on %s" % (x.device,)
    if isinstance(x, np.ndarray):
        return "numpy.ndarray"
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else "%s.%s" % (t.__module__, t.__name__)


def _mode(name, value, table):
    if not isinstance(value, str):
        raise TypeError(_msg(_OP, name, " or ".join(repr(k) for k in table), _kind_of(value)))
    if value not in table:
        raise ValueError(_msg(_OP, name, " or ".join(repr(k) for k in table), repr(value)))
    return table[value]


def _shape_str(shape):
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def _check_rank2(fn, name, shape, symbolic):
    # The quantizer's weight: 2-D first, to size its outputs.
    if len(shape) != 2:
        raise ValueError("%s: %s must be 2-D %s, got shape %s" % (fn, name, symbolic,
                                                                  _shape_str(shape)))


def _check_weight_shape(shape, cuda, op_shapes):
    """The weight's [N, K]. The contract's quantizer (section 5) takes any N >= 1 and K a
    multiple of 16; with op_shapes (the public function) a weight the op could not then be used
    with is refused here, naming the op's rule: the emulator's for a CPU weight, the GPU
    kernel's for a CUDA one (its result stays on the GPU)."""
    _check_rank2(_QUANTIZER, "weight", shape, "[N, K]")
    n, k = (int(d) for d in shape)
    if not op_shapes:
        return n, k
    if cuda and (n < 128 or n % 128 or k < 256 or k % 256):
        raise ValueError(_msg(_QUANTIZER, "weight",
                              "[N, K] with N a positive multiple of 128 and K of 256, as the GPU "
                              "op takes it (a CUDA weight; the emulator takes N >= 1 and K a "
                              "multiple of 64: quantize a CPU copy for it)",
                              "shape %s" % _shape_str(shape)))
    if n < 1 or k < 64 or k % 64:
        raise ValueError(_msg(_QUANTIZER, "weight",
                              "[N, K] with N >= 1 and K a positive multiple of 64, as the op "
                              "takes it (the GPU kernel: also K % 256 == 0, N % 128 == 0)",
                              "shape %s" % _shape_str(shape)))
    return n, k


def _sf_shape(n, k):
    """The swizzled weight scales' 2-D shape: [round_up(N,128), round_up(K/16,4)]."""
    return ((n + 127) // 128 * 128, ((k + 15) // 16 + 3) // 4 * 4)


def backend_name(device=None, sm90_emulation="faithful"):
    """The GPU build that runs on a CUDA device (None: the current one; an int or a
    torch.device), e.g. "sm_90a validation, faithful (...)".

    Raises:
      TypeError / ValueError: sm90_emulation is not "faithful" or "fast".
      RuntimeError: no supported CUDA device (no NVIDIA driver or GPU, a driver older than the
        CUDA 13.0 runtime - R580 or newer is needed - or a GPU other than SM12x / sm_90).
    """
    code = _mode("sm90_emulation", sm90_emulation, _SM90_EMULATION)
    if device is None:
        index = -1
    elif isinstance(device, numbers.Integral):
        index = int(device)
    else:
        index = getattr(device, "index", None)
        index = -1 if index is None else int(index)
    buf = ctypes.create_string_buffer(512)
    _native.check(_native.lib().h3_backend_name(index, code, buf, len(buf)))
    return buf.value.decode()


def stall_report():
    """Why the op's kernel gave up waiting on the current CUDA device, or None.

    Every wait in the kernel is bounded (MINIMAX_H3_NVFP4_WAIT_LIMIT_MS, default 60 s): instead
    of hanging, the kernel records which CTA, warp role, tile and barrier or ready flag it waited
    on and traps. torch then raises a CUDA launch failure at its next synchronization; call this
    afterwards for the record (e.g. to paste into a bug report)."""
    msg = _native.lib().h3_stall_message().decode("utf-8", "replace")
    return msg or None


# ---- NumPy: the emulator ------------------------------------------------------------------------

# The NumPy dtypes of each table dtype (core/operands.def), and each operand's by name.
_NP_DTYPES = {
    "BF16": ("bfloat16 (uint16 bit patterns or ml_dtypes.bfloat16)", _bf16.is_bf16_dtype),
    "U8": ("uint8", lambda d: d == np.uint8),
    "SF8": ("uint8 (or float8_e4m3fn bytes)",
            lambda d: d == np.uint8 or (d.name == "float8_e4m3fn" and d.itemsize == 1)),
    "I32": ("int32", lambda d: d == np.int32),
    "F32": ("float32", lambda d: d == np.float32),
}
_DTYPE_OF = {o.name: o.dtype for o in _operands.OPERANDS}
# The operands the API takes (all but the GPU's ready-flag workspace), in the table's order.
_API = tuple(o for o in _operands.OPERANDS if o.dtype != "FLAGS")
_API_NAMES = tuple(o.name for o in _API)
_OUT = next(o for o in _API if o.name == "out")


def _np_check(name, a, writeable=False):
    if not isinstance(a, np.ndarray):
        raise TypeError(_msg(_OP, name, "a numpy.ndarray (like attn_out)", _kind_of(a)))
    expected, ok = _NP_DTYPES[_DTYPE_OF[name]]
    if not ok(a.dtype):
        raise TypeError(_msg(_OP, name, "of dtype %s" % expected, str(a.dtype)))
    if not a.flags.c_contiguous:
        raise ValueError(_msg(_OP, name, "C-contiguous (dense, row-major)",
                              "strides %s" % (a.strides,)))
    if writeable and not a.flags.writeable:
        raise ValueError(_msg(_OP, name, "a writeable array", "a read-only array"))


def _np_arr(a):
    if a is None:
        return _native.H3Array()
    return _native.make_array(a.ctypes.data, a.shape)


def _np_scalar(name, v):
    """A float32 scale as a float32 array of one element: given so, or a Python/NumPy float."""
    if isinstance(v, np.ndarray):
        _np_check(name, v)
        return v
    if isinstance(v, (numbers.Real, np.floating)) and not isinstance(v, (bool, np.bool_)):
        return np.array([v], dtype=np.float32)
    raise TypeError(_msg(_OP, name, "a float or a float32 numpy.ndarray of one element",
                         _kind_of(v)))


def _dims(ops):
    """{"M": .., "N": .., "K": .., "G": ..} from the rows that define them (the table's first
    row with the bare symbol), where those have the rank that says it; else the symbol is
    missing and the library reports the rank."""
    dims = {}
    for o, a in zip(_API, ops):
        shape = getattr(a, "shape", None)
        if o.shape not in ("DIMS1", "DIMS2") or shape is None or len(shape) != len(o.dims):
            continue
        for sym, extent in zip(o.dims, shape):
            if sym in ("M", "N", "K", "G"):
                dims.setdefault(sym, int(extent))
    return dims


def _out_shape(ops):
    """out's [M, N], or None where M or N is unknown (a rank the library will refuse)."""
    dims = _dims(ops)
    shape = tuple(dims.get(sym) for sym in _OUT.dims)
    return None if None in shape else shape


def _numpy_out_proj(ops, gemm):
    ops = list(ops)
    for i, o in enumerate(_API):
        a = ops[i]
        if o.shape == "SCALAR":
            ops[i] = _np_scalar(o.name, a)
        elif a is not None or o.role == "IN" and o.presence != "OPTIONAL":
            _np_check(o.name, a, writeable=o.role != "IN")
    for name, a in zip(_API_NAMES, ops):
        _native.check_ndim(_OP, name, a)
    args = dict(zip(_API_NAMES, ops))
    out = args["out"]
    if out is None:
        shape = _out_shape(ops)
        if shape is not None:
            out = args["out"] = np.empty(shape, dtype=args["residual"].dtype)
    if out is not None and out is args["residual"]:
        args["residual"] = None  # in place (contract section 9)
    a = _native.new_args(_np_arr, **args)
    a.cpu_gemm = gemm
    _native.check(_native.lib().h3_out_proj_cpu(ctypes.byref(a)))
    return out


# ---- torch: the GPU kernel (CUDA tensors) or the emulator (CPU tensors) --------------------------

if _torch is not None:
    from . import _eager
    from . import _torch_op

    # The tile table now rather than at the first call: torch.compile traces that call and cannot
    # trace the ctypes calls that read the table (a process's first call, compiled with
    # fullgraph=True, would fail).
    try:
        _native.tiles()
    except (ImportError, OSError, AttributeError):
        pass  # no usable library: the first call raises why


def _t_check(name, t, device, shape_hint=""):
    if not isinstance(t, _torch.Tensor):
        raise TypeError(_msg(_OP, name, "a torch.Tensor (like attn_out)", _kind_of(t)))
    expected, dtypes = _eager.TORCH_DTYPES[_DTYPE_OF[name]]
    if t.dtype not in dtypes:
        raise TypeError(_msg(_OP, name, "of dtype %s%s" % (expected, shape_hint), str(t.dtype)))
    if t.device != device:
        raise ValueError(_msg(_OP, name, "on %s (the device of attn_out)" % (device,),
                              str(t.device)))
    if not t.is_contiguous():
        raise ValueError(_msg(_OP, name, "contiguous (dense, row-major)",
                              "strides %s" % (tuple(t.stride()),)))


def _torch_out_proj(ops, sm90, gemm, tile):
    """The full route: the checks below (what routing needs: type, dtype, device, contiguity;
    the library validates the rest), then the registered op (what the eager fast path, tried
    first by the caller, does not take). ops: the operands in _API's order."""
    attn_out = ops[0]
    device = attn_out.device
    if device.type not in ("cuda", "cpu", "meta"):
        raise ValueError(_msg(_OP, "attn_out", "a CUDA or CPU tensor", str(device)))
    tensors = list(ops)
    values = []
    for i, o in enumerate(_API):
        t = ops[i]
        if o.presence == "OR_VALUE":
            if isinstance(t, _torch.Tensor):
                _t_check(o.name, t, device)
                values.append(0.0)
            elif (isinstance(t, (numbers.Real, np.floating))
                  and not isinstance(t, (bool, np.bool_))):
                tensors[i] = None
                values.append(float(t))
            else:
                raise TypeError(_msg(_OP, o.name, "a float or a float32 tensor", _kind_of(t)))
        elif t is not None or o.role == "IN" and o.presence != "OPTIONAL":
            _t_check(o.name, t, device, " (a tensor of shape [1])" if o.shape == "SCALAR" else "")
    for name, t in zip(_API_NAMES, tensors):
        _native.check_ndim(_OP, name, t)
    args = dict(zip(_API_NAMES, tensors))
    out = args["out"]
    in_place = out is args["residual"]
    shape = _out_shape(tensors)
    if out is None and shape is not None:
        out = args["out"] = _torch.empty(shape, dtype=_torch.bfloat16, device=device)
    if (device.type == "cuda" and args["act_q"] is None and args["act_sf"] is None
            and shape is not None and "K" in _dims(tensors)):
        # The kernel's activation workspace, from torch's allocator (stream-ordered, and in the
        # graph's private pool under capture) rather than the op's own cudaMallocAsync.
        m, k = shape[0], _dims(tensors)["K"]
        args["act_q"] = _torch.empty((m, k // 2), dtype=_torch.uint8, device=device)
        args["act_sf"] = _torch.empty((m, k // 16), dtype=_torch.uint8, device=device)
    if in_place:
        args["residual"] = None
    _torch_op.out_proj(*(args[n] for n in _API_NAMES), *values, sm90, gemm, tile)
    return out


# ---- the API ------------------------------------------------------------------------------------

def minimax_h3_nvfp4_out_proj(attn_out, o_weight_q, o_weight_sf, o_weight_global_scale,
                              act_global_scale, gate, gate_index, residual, *, out=None,
                              act_q=None, act_sf=None, sm90_emulation="faithful",
                              cpu_gemm="fast", tile="auto", act_smooth=None, lora_down=None,
                              lora_up=None):
    """out = bf16(residual + bf16(gate[gate_index] * (act_nvfp4 @ w_nvfp4^T) / (act_gs * w_gs)))

    Args (M tokens, N = 5376, K = 7168, G = 9 for MiniMax-H3; docs/contract.md section 1):
      attn_out: bf16 [M, K], the attention output (quantized to NVFP4 inside the op).
      o_weight_q: uint8 [N, K/2], o_weight_sf: uint8 [round_up(N,128), round_up(K/16,4)]
        (128x4 swizzled), o_weight_global_scale: float or float32 tensor [1] - the three results
        of quantize_minimax_h3_o_weight_nvfp4.
      act_global_scale: float32 [1] (CUDA tensor on the GPU), the calibrated
        RN(RN(1 / amax) * 2688) (contract section 5).
      gate: bf16 [G, N], the gate_msa rows of the AdaLN table.
      gate_index: int32 [M], the gate row of each token; outside [0, G): out = residual.
      residual: bf16 [M, N].
      out: optional bf16 [M, N], written and returned; may be `residual` itself (in place).
      act_q, act_sf: optional uint8 [M, K/2] and [M, K/16] (linear) workspaces the op fills with
        the activation codes and scales.
      sm90_emulation, cpu_gemm, tile: keyword-only extras beyond FlashInfer's (module
        docstring).
      act_smooth: optional float32 [K], finite: each activation multiplied by it (bf16-rounded)
        before quantization (contract section 12; ModelOpt's pre_quant_scale). Both backends
        compute it.
      lora_down, lora_up: optional bf16 [r, K] and [N, r], r a multiple of 16 in 16..64, given
        together, finite: the low-rank branch bf16(x' @ lora_down^T) @ lora_up^T added to o
        before the gate (contract section 13; quality.py prepares all three). Both backends
        compute it (one factor alone or another r: ValueError).
    NumPy has no bf16 dtype: NumPy bf16 operands are uint16 arrays of bf16 bit patterns (or
    ml_dtypes.bfloat16 arrays); minimax_h3_nvfp4.bf16 converts from and to float32.

    Returns:
      out, bf16 [M, N]: a torch tensor on attn_out's device, or a NumPy array of
      residual's dtype (uint16 bits or ml_dtypes.bfloat16); `out` itself when given.
    Raises (before anything is written):
      TypeError: an operand of the wrong type or dtype (e.g. gate_index not int32), or a
        keyword extra that is not a string.
      ValueError: shapes that disagree (messages name the operand and the expected shape,
        e.g. "residual must have shape [M, N] = [37, 128] (M = 37 from attn_out [M, K], N =
        128 from o_weight_q [N, K/2]), got [37, 64]"), K not a positive
        multiple of 64 (the GPU: of 256, N of 128), more than 4 dimensions, non-contiguous or
        read-only outputs, forbidden aliasing, a global scale that is not finite and > 0, an
        unknown keyword value, operands on different devices.
      RuntimeError: a CUDA error, no usable NVIDIA driver or GPU for CUDA tensors, an
        unsupported GPU.
    """
    # The common case inline (a str the table has; host time per call matters); anything else
    # goes to _mode, which raises or accepts as always.
    sm90 = _SM90_EMULATION.get(sm90_emulation) if type(sm90_emulation) is str else None
    if sm90 is None:
        sm90 = _mode("sm90_emulation", sm90_emulation, _SM90_EMULATION)
    gemm = _CPU_GEMM.get(cpu_gemm) if type(cpu_gemm) is str else None
    if gemm is None:
        gemm = _mode("cpu_gemm", cpu_gemm, _CPU_GEMM)
    tiles = _native._tiles or _native.tiles()
    tile_code = tiles.get(tile) if type(tile) is str else None
    if tile_code is None:
        tile_code = _mode("tile", tile, tiles)
    # Every operand, in the table's order (_API: core/operands.def less the GPU's workspace).
    ops = (attn_out, o_weight_q, o_weight_sf, o_weight_global_scale, act_global_scale, gate,
           gate_index, residual, out, act_q, act_sf, act_smooth, lora_down, lora_up)
    if _torch is not None and isinstance(attn_out, _torch.Tensor):
        if _eager.enabled and _eager.plain_eager():
            # Plain eager calls skip torch's op dispatch (_eager.py); anything it does not take
            # goes to the full route's checks and the registered op.
            got = _eager.try_call(ops, sm90, gemm, tile_code)
            if got is not None:
                return got
        return _torch_out_proj(ops, sm90, gemm, tile_code)
    if isinstance(attn_out, np.ndarray):
        return _numpy_out_proj(ops, gemm)
    raise TypeError(_msg(_OP, "attn_out", "a torch.Tensor or a numpy.ndarray", _kind_of(attn_out)))


def _quantize_weight_cuda(weight, is_f32, op_shapes):
    """The GPU quantizer on a CUDA weight: outputs on its device, w_gs as a [1] tensor there."""
    n, k = _check_weight_shape(tuple(weight.shape), True, op_shapes)
    w = weight.detach()
    if not w.is_contiguous() or w.data_ptr() % 16 != 0:
        w = w.clone(memory_format=_torch.contiguous_format)  # a fresh, aligned copy
    dev = w.device
    q = _torch.empty((n, k // 2), dtype=_torch.uint8, device=dev)
    sf = _torch.empty(_sf_shape(n, k), dtype=_torch.uint8, device=dev)
    gs = ctypes.c_float(0.0)
    wa, qa, sfa = (_native.make_array(x.data_ptr(), x.shape) for x in (w, q, sf))
    stream = _torch.cuda.current_stream(dev).cuda_stream
    _native.check(_native.lib().h3_quantize_weight_gpu(
        ctypes.byref(wa), 1 if is_f32 else 0, ctypes.byref(qa), ctypes.byref(sfa),
        ctypes.byref(gs), dev.index if dev.index is not None else -1, stream))
    return q, sf, _torch.tensor([gs.value], dtype=_torch.float32, device=dev)


def quantize_minimax_h3_o_weight_nvfp4(weight):
    """Quantizes the out-projection weight (contract section 5), once: a CUDA tensor on its GPU
    (kernels/weight_quant/weight_quant.h, on the current stream, which it synchronizes once), anything else
    on the CPU; both give the same bytes.

    Args:
      weight: [N, K] bf16 or float32 (nn.Linear(7168, 5376).weight: [5376, 7168]), every value
        finite; a torch tensor (any device) or a NumPy array (bf16 as uint16 bit patterns or
        ml_dtypes.bfloat16, or float32).
    Returns:
      (o_weight_q uint8 [N, K/2], o_weight_sf uint8 [round_up(N,128), round_up(K/16,4)] 128x4
      swizzled, o_weight_global_scale float32 [1] = RN(RN(1 / amax) * 2688)), on the weight's device
      (torch) or as NumPy arrays.
    Raises:
      TypeError: weight is not a torch tensor or NumPy array of bf16 (NumPy: uint16 bit
        patterns or ml_dtypes.bfloat16) or float32.
      ValueError: weight is not 2-D, or of a shape the op cannot take - N < 1 or K not a
        positive multiple of 64; for a CUDA weight (the GPU op's rule) N not a positive multiple
        of 128 or K of 256 - (the contract's quantizer alone would take any K % 16 == 0), a
        value is not finite,
        or the global scale 2688 / amax would overflow float32.
      RuntimeError (CUDA weights): a CUDA error, an unsupported GPU, the current stream being
        captured.
    """
    return _quantize_weight(weight, op_shapes=True)


def _quantize_weight(weight, op_shapes):
    """quantize_minimax_h3_o_weight_nvfp4; op_shapes=False: the contract's quantizer alone (any
    N >= 1, K a multiple of 16; the tests of section 5 use it)."""
    is_torch = _torch is not None and isinstance(weight, _torch.Tensor)
    if is_torch:
        if weight.dtype not in (_torch.bfloat16, _torch.float32):
            raise TypeError(_msg(_QUANTIZER, "weight", "a bfloat16 or float32 tensor",
                                 str(weight.dtype)))
        is_f32 = weight.dtype == _torch.float32
        if weight.is_cuda:
            return _quantize_weight_cuda(weight, is_f32, op_shapes)
        host = weight.detach().to("cpu").contiguous()
        if not is_f32:
            host = host.view(_torch.int16)
        w = host.numpy()
    elif isinstance(weight, np.ndarray):
        if not (_bf16.is_bf16_dtype(weight.dtype) or weight.dtype == np.float32):
            raise TypeError(_msg(_QUANTIZER, "weight",
                                 "a bfloat16 (uint16 bit patterns or ml_dtypes.bfloat16) or "
                                 "float32 array", str(weight.dtype)))
        is_f32 = weight.dtype == np.float32
        w = np.ascontiguousarray(weight)
    else:
        raise TypeError(_msg(_QUANTIZER, "weight", "a torch.Tensor or a numpy.ndarray",
                             _kind_of(weight)))
    n, k = _check_weight_shape(w.shape, False, op_shapes)
    q = np.zeros((n, k // 2), dtype=np.uint8)
    sf = np.zeros(_sf_shape(n, k), dtype=np.uint8)
    gs = ctypes.c_float(0.0)
    wa, qa, sfa = (_native.make_array(x.ctypes.data, x.shape) for x in (w, q, sf))
    _native.check(_native.lib().h3_quantize_weight_cpu(
        ctypes.byref(wa), 1 if is_f32 else 0, ctypes.byref(qa), ctypes.byref(sfa),
        ctypes.byref(gs)))
    gs = np.array([gs.value], dtype=np.float32)
    if is_torch:
        dev = weight.device
        return (_torch.from_numpy(q).to(dev), _torch.from_numpy(sf).to(dev),
                _torch.from_numpy(gs).to(dev))
    return q, sf, gs
