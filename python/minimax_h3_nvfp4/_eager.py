"""The eager fast path of the torch API: straight to the C ABI when nothing traces or compiles.

torch's custom-op dispatch (autograd, ADInplaceOrView and backend layers in Python) costs about
100 us per call and its first call imports the compiler stack (torch._dynamo, sympy, ...),
while the call itself is a few microseconds of ctypes. `try_call` runs the op directly when the
call is plain eager:
  - not inside torch.compile / export (torch.compiler.is_compiling(), a module flag: checking
    it imports nothing; Dynamo folds it to True while tracing, so traced code takes the op);
  - no torch function or dispatch mode active (FakeTensorMode, proxy tracing, functionalization
    and user modes push one), no functorch transform, no torch.jit.trace;
  - every tensor operand a plain torch.Tensor (or nn.Parameter) of the expected dtype, on
    attn_out's device, contiguous, and none requiring grad while grad mode is on.
Anything else returns None and the caller takes the full route (diffusion_ops): its checks,
which raise the errors, then the registered op. The checks here only decide the route: an
operand they do not accept is checked again, in order, by the same code as always, so both
routes raise the same errors; the C ABI validates shapes, sizes and aliasing on both.

Per call here: the cheap checks above, a dict lookup of a plan (built once per thread, device,
operand shapes and options: the ctypes struct with its shapes, the resolved tile, the
workspace layout), the data pointers and the stream written into the struct, two allocations
from torch's caching allocator (out, unless given; one workspace for act_q, act_sf and the
ready flags, unless act_q and act_sf are given) and the C call. The version counters of the
mutated tensors are bumped as the registered op's ADInplaceOrView layer does. Nothing here
synchronizes or needs the op's registration: a first call under CUDA-graph capture works.
"""

import ctypes
import os
import threading

import torch

from . import _native
from . import _torch_op
from . import tuning

_C = torch._C
_PLAIN = (torch.Tensor, torch.nn.Parameter)
_BF16 = (torch.bfloat16,)
_U8 = (torch.uint8,)
_SF = tuple(t for t in (torch.uint8, getattr(torch, "float8_e4m3fn", None)) if t)
_I32 = (torch.int32,)
_F32 = (torch.float32,)


def _zero():
    return 0


def _none():
    return None


def _false():
    return False


_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or _false
_function_modes = getattr(_C, "_len_torch_function_stack", _zero)
_dispatch_modes = getattr(_C, "_len_torch_dispatch_stack", _zero)
_functorch = getattr(_C, "_are_functorch_transforms_active", _false)
_jit_tracing = getattr(_C, "_get_tracing_state", _none)
_raw_stream = getattr(_C, "_cuda_getCurrentRawStream", None)
_inference_mode = torch.is_inference_mode_enabled
_bump = getattr(getattr(torch.autograd, "graph", None), "increment_version", None)

# Whether try_call may run at all (tests and `bench` compare both routes; the environment
# variable MINIMAX_H3_NVFP4_EAGER_FAST_PATH=0 turns it off for a process), and the calls each
# route ran (_torch_op.stats).
enabled = os.environ.get("MINIMAX_H3_NVFP4_EAGER_FAST_PATH", "1") != "0"
stats = _torch_op.stats



def _word(name):
    """The index of an H3Array field's data pointer in the struct seen as 64-bit words."""
    return getattr(_native.H3OutProjArgs, name).offset // 8


(_W_ATTN, _W_Q, _W_SF, _W_WGS, _W_AGS, _W_GATE, _W_IDX, _W_RES, _W_OUT, _W_ACTQ, _W_ACTSF,
 _W_FLAGS) = (_word(n) for n in (
     "attn_out", "o_weight_q", "o_weight_sf", "o_weight_global_scale", "act_global_scale",
     "gate", "gate_index", "residual", "out", "act_q", "act_sf", "ready_flags"))
_ALIGN = 256  # of each piece of the workspace (the C ABI needs 16)
_MAX_PLANS = 256
_tls = threading.local()


def plain_eager():
    """True where nothing traces or compiles (the module docstring's first two points)."""
    return not (_compiling() or _function_modes() or _dispatch_modes() or _functorch()
                or _jit_tracing() is not None)


class _Plan:
    """The C ABI's argument struct for one device, set of operand shapes and options."""

    __slots__ = ("args", "ref", "words", "m", "n", "k", "out_shape", "ws_bytes", "sf_off",
                 "flags_off", "auto", "generation", "emulation")


def _round_up(x, to):
    return (x + to - 1) // to * to


def _build(cuda, dev, shapes, sm90, gemm, tile, w_is_tensor, internal_ws):
    """A new plan, or None where a shape is one the full route must reject (rank)."""
    attn, q = shapes[0], shapes[1]
    if len(attn) != 2 or len(q) != 2 or any(s is not None and len(s) > _native.MAX_NDIM
                                            for s in shapes):
        return None
    p = _Plan()
    a = _native.H3OutProjArgs()
    a.version = _native.CAPI_VERSION
    a.device = dev if cuda else -1
    a.sm90_emulation = sm90
    a.cpu_gemm = gemm
    a.tile = tile
    names = ("attn_out", "o_weight_q", "o_weight_sf", "o_weight_global_scale",
             "act_global_scale", "gate", "gate_index", "residual", "out", "act_q", "act_sf")
    for name, shape in zip(names, shapes):
        if shape is not None:
            setattr(a, name, _native.make_array(0, shape))
    p.m, p.k = int(attn[0]), int(attn[1])
    p.n = int(q[0])
    p.out_shape = (p.m, p.n)
    if shapes[8] is None:  # out allocated per call
        a.out = _native.make_array(0, p.out_shape)
    p.ws_bytes = p.sf_off = p.flags_off = 0
    if cuda:
        flag_bytes = int(_native.lib().h3_ready_flag_bytes(p.m))
        if internal_ws:
            a.act_q = _native.make_array(0, (p.m, p.k // 2))
            a.act_sf = _native.make_array(0, (p.m, p.k // 16))
            p.sf_off = _round_up(p.m * (p.k // 2), _ALIGN)
            p.flags_off = p.sf_off + _round_up(p.m * (p.k // 16), _ALIGN)
        p.ws_bytes = p.flags_off + flag_bytes
        a.ready_flags = _native.make_array(0, (flag_bytes,))
    p.auto = cuda and tile == _native.tiles()["auto"]
    p.generation = None
    p.emulation = "fast" if sm90 == 1 else "faithful"
    p.args = a
    p.ref = ctypes.byref(a)
    p.words = memoryview(a).cast("B").cast("Q")
    return p


def try_call(attn_out, o_weight_q, o_weight_sf, o_weight_global_scale, act_global_scale, gate,
             gate_index, residual, out, act_q, act_sf, sm90, gemm, tile):
    """The op's result, run here; or None where the call must take the full route (then
    nothing was written and nothing was allocated that outlives this call)."""
    if type(attn_out) not in _PLAIN:
        return None
    cuda = attn_out.is_cuda
    if cuda:
        dev = attn_out.get_device()
    elif attn_out.is_cpu:
        dev = -1
    else:
        return None
    w_gs = o_weight_global_scale
    w_is_tensor = type(w_gs) in _PLAIN
    if not w_is_tensor and type(w_gs) is not float:
        return None
    in_place = out is residual
    if cuda and (act_q is None) != (act_sf is None):
        return None  # the GPU's error (both or neither), through the full route
    checks = [(attn_out, _BF16), (o_weight_q, _U8), (o_weight_sf, _SF), (act_global_scale, _F32),
              (gate, _BF16), (gate_index, _I32), (residual, _BF16)]
    if w_is_tensor:
        checks.append((w_gs, _F32))
    if out is not None:
        checks.append((out, _BF16))
    if act_q is not None:
        checks.append((act_q, _U8))
    if act_sf is not None:
        checks.append((act_sf, _SF))
    grad = _C.is_grad_enabled()
    for t, dtypes in checks:
        if (type(t) not in _PLAIN or t.dtype not in dtypes or not t.is_contiguous()
                or (grad and t.requires_grad)):
            return None
        if cuda:
            if not t.is_cuda or t.get_device() != dev:
                return None
        elif not t.is_cpu:
            return None
    shapes = (attn_out.shape, o_weight_q.shape, o_weight_sf.shape,
              w_gs.shape if w_is_tensor else None, act_global_scale.shape, gate.shape,
              gate_index.shape, None if in_place else residual.shape,
              None if out is None else out.shape, None if act_q is None else act_q.shape,
              None if act_sf is None else act_sf.shape)
    if not shapes[0] or not shapes[0][0]:
        return None  # M = 0 (or not 2-D): rare, the full route
    key = (dev, sm90, gemm, tile, shapes)
    plans = getattr(_tls, "plans", None)
    if plans is None:
        plans = _tls.plans = {}
    plan = plans.get(key)
    if plan is None:
        plan = _build(cuda, dev, shapes, sm90, gemm, tile, w_is_tensor,
                      cuda and act_q is None)
        if plan is None:
            return None
        if len(plans) >= _MAX_PLANS:
            plans.clear()
        plans[key] = plan
    if out is None:
        out = torch.empty(plan.out_shape, dtype=torch.bfloat16, device=attn_out.device)
    if _torch_op.registered and _bump is not None and not _inference_mode():
        # What the registered op's ADInplaceOrView layer does for its mutated arguments.
        _bump(out)
        if act_q is not None:
            _bump(act_q)
        if act_sf is not None:
            _bump(act_sf)
    w = plan.words
    w[_W_ATTN] = attn_out.data_ptr()
    w[_W_Q] = o_weight_q.data_ptr()
    w[_W_SF] = o_weight_sf.data_ptr()
    if w_is_tensor:
        w[_W_WGS] = w_gs.data_ptr()
    else:
        plan.args.o_weight_global_scale_value = w_gs
    w[_W_AGS] = act_global_scale.data_ptr()
    w[_W_GATE] = gate.data_ptr()
    w[_W_IDX] = gate_index.data_ptr()
    if not in_place:
        w[_W_RES] = residual.data_ptr()
    w[_W_OUT] = out.data_ptr()
    lib = _native.lib()
    if not cuda:
        if act_q is not None:
            w[_W_ACTQ] = act_q.data_ptr()
        if act_sf is not None:
            w[_W_ACTSF] = act_sf.data_ptr()
        stats["fast"] += 1
        _native.check(lib.h3_out_proj_cpu(plan.ref))
        return out
    if plan.auto and plan.generation != tuning.generation:
        # Resolved once per plan and tuning-cache generation (a dict lookup after the first).
        plan.args.tile = tuning.resolve(dev, plan.m, plan.n, plan.k, plan.emulation)
        plan.generation = tuning.generation
    ws = torch.empty((plan.ws_bytes,), dtype=torch.uint8, device=attn_out.device)
    base = ws.data_ptr()
    if act_q is None:
        w[_W_ACTQ] = base
        w[_W_ACTSF] = base + plan.sf_off
    else:
        w[_W_ACTQ] = act_q.data_ptr()
        w[_W_ACTSF] = act_sf.data_ptr()
    w[_W_FLAGS] = base + plan.flags_off
    if _raw_stream is not None:
        stream = _raw_stream(dev)
    else:
        stream = torch.cuda.current_stream(attn_out.device).cuda_stream
    stats["fast"] += 1
    stats["tile"] = plan.args.tile
    _native.check(lib.h3_out_proj_gpu(plan.ref, stream))
    # `ws` goes back to torch's caching allocator here, stream-ordered on the current stream
    # (the one the kernel was enqueued on), as the full route's workspace tensors do.
    return out
