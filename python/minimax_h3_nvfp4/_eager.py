"""The eager fast path of the torch API: straight to the C ABI when nothing traces or compiles.

torch's custom-op dispatch (autograd, ADInplaceOrView and backend layers in Python) costs about
100 us per call and its first call imports the compiler stack (torch._dynamo, sympy, ...),
while the call itself is a few microseconds of ctypes. `try_call` runs the op directly when the
call is plain eager:
  - not inside torch.compile / export (torch.compiler.is_compiling(), a module flag: checking
    it imports nothing; Dynamo folds it to True while tracing, so traced code takes the op);
  - no torch function or dispatch mode active (FakeTensorMode, proxy tracing, functionalization
    and user modes push one), no functorch transform, no torch.jit.trace;
  - no forward-AD dual level (the op's route carries or refuses tangents);
  - every tensor operand a plain, strided torch.Tensor (or nn.Parameter) of the expected dtype,
    on attn_out's device, contiguous, none requiring grad while grad mode is on, and no output
    an inference tensor outside inference mode.
Anything else returns None and the caller takes the full route (diffusion_ops): its checks,
which raise the errors, then the registered op. The checks here only decide the route: an
operand they do not accept is checked again, in order, by the same code as always, so both
routes raise the same errors; the library (the host API or the emulator, behind the C ABI)
validates shapes, sizes and aliasing on both.

Per call here: the cheap checks above, a dict lookup of a plan (built once per thread, device,
operand shapes and options: the ctypes struct with its shapes, the resolved tile, the
workspace layout), the data pointers and the stream written into the struct, one allocation
from torch's caching allocator (out, unless given: torch.empty_like(residual), cheaper to call
than torch.empty) and the C call. The version counters of the
mutated tensors are bumped once the call has succeeded, as the registered op's ADInplaceOrView
layer does (one C call on torch 2.x). Nothing here synchronizes or needs the op's registration: a
first call under
CUDA-graph capture works.

The workspace (act_q, act_sf and the ready flags; the flags alone where act_q and act_sf are
given) is cached per (thread, device, stream): one tensor of at most WS_CACHE_MAX_BYTES, at
most WS_CACHE_MAX_ENTRIES per thread, reused by every call on that stream. Why that is safe:
  - Calls on one stream run in stream order, so a call's kernel starts after the previous one's
    finished; each kernel starts on all-zero ready flags, zeroed by the C ABI on the stream or
    left so by the previous kernel there (next point). Threads never share an entry (the cache
    is thread-local), streams never share one (the key).
  - Under capture the workspace must come from the graph's pool and live as long as the graph:
    the call passes cached_workspace=1 and the C ABI, which asks the stream itself
    (cudaStreamIsCapturing, after entering the device), returns H3_CAPTURING without writing
    anything; the call is then made again with a workspace allocated for it, freed when it
    returns, as the full route does (a cache entry allocated by that very call came from the
    capture's pool: it becomes the call's workspace and leaves the cache). So a capture never
    uses a cached tensor, and the cache never keeps one of a graph's pool.
  - The flags' memset: every kernel leaves its ready flags zero (ready_flags.h ResetAtExit), so
    a call whose flag region (offset and bytes in the entry) is the one the entry's last call
    succeeded with passes ready_flags_zeroed=1 and the C ABI skips its cudaMemsetAsync (a stream
    operation, 1.4 us of host time on the H200's host). A new entry, a failed or interrupted
    call (the record is cleared before the C call and set after it) or another region: zeroed
    on the stream. Under capture the graph's own workspace is always zeroed.
  - torch.cuda.set_stream / torch.cuda.stream(...) change the raw stream, hence the entry. A
    stream destroyed and its handle reused by a new one gets the entry of the old one: torch's
    caching allocator hands a freed block to the next allocation on the same handle in just
    the same way, so the full route and a per-call workspace have the same property.
  - An entry dropped (a fifth stream, the thread's end, release_workspaces()) goes back to
    torch's allocator, freed on the stream it was allocated on, stream-ordered as any tensor.
  - Memory: at most WS_CACHE_MAX_ENTRIES x WS_CACHE_MAX_BYTES per thread (64 MiB), held until
    released: torch.cuda.empty_cache() cannot return it; release_workspaces() drops this
    thread's entries (all_threads=True: every live thread's), least recently used first when a
    fifth stream comes. cudaStreamDestroy returns with work still queued: a stream destroyed
    that way and its handle reused at once could overlap the old stream's last kernel on the
    entry, as a block of torch's allocator could; release first. Larger workspaces (M above
    ~4000 at K = 7168, where the kernel takes far longer than the host) are allocated per call.
"""

import ctypes
import os
import threading
import weakref

import torch

from . import _native
from . import _operands
from . import _route
from . import _torch_op
from . import tuning

_C = torch._C
_PLAIN = (torch.Tensor, torch.nn.Parameter)
_STRIDED = torch.strided
# The torch dtypes of each table dtype (core/operands.def), as both routes accept and name them.
TORCH_DTYPES = {
    "BF16": ("torch.bfloat16", (torch.bfloat16,)),
    "U8": ("torch.uint8", (torch.uint8,)),
    "SF8": ("torch.uint8 (or torch.float8_e4m3fn)",
            tuple(t for t in (torch.uint8, getattr(torch, "float8_e4m3fn", None)) if t)),
    "I32": ("torch.int32", (torch.int32,)),
    "F32": ("torch.float32", (torch.float32,)),
}
# try_call's operands: the registered op's (the table's, less the GPU's ready-flag workspace),
# in its order; by index, what each row is to the route.
_NAMES = _torch_op.OPERAND_NAMES
_ROWS = tuple(o for o in _operands.OPERANDS if o.name in _NAMES)
_DTYPES = tuple(TORCH_DTYPES[o.dtype][1] for o in _ROWS)
_REQUIRED = tuple(i for i, o in enumerate(_ROWS) if o.role == "IN" and o.presence != "OPTIONAL")
_VALUE_ROWS = tuple(i for i, o in enumerate(_ROWS) if o.presence == "OR_VALUE")
_WRITTEN = tuple(i for i, o in enumerate(_ROWS) if o.role != "IN")
_RES = next(i for i, o in enumerate(_ROWS) if o.presence == "IN_PLACE")
_OUT, _ACTQ, _ACTSF = (_NAMES.index(n) for n in ("out", "act_q", "act_sf"))
# The rows the registered op declares mutated (_torch_op._MUTATED, from the table) besides out:
# their version counters are bumped after a run, as the op's own route does.
_MUTATED_BESIDES_OUT = tuple(_NAMES.index(n) for n in _torch_op._MUTATED if n != "out")
# Operands the GPU kernel refuses, through the full route (its error, and no cached workspace
# touched by a call that cannot run): none. The quality options (contract sections 12, 13) are
# the kernel's and take the fast path like any optional input.
_NOT_ON_GPU = ()


def _zero():
    return 0


def _false():
    return False


_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or _false
_function_modes = getattr(_C, "_len_torch_function_stack", _zero)
_dispatch_modes = getattr(_C, "_len_torch_dispatch_stack", _zero)
_functorch = getattr(_C, "_are_functorch_transforms_active", _false)
# torch.jit.trace: _is_tracing() is bool(_get_tracing_state()) at half the cost (every torch
# this package supports has it).
_jit_tracing = getattr(_C, "_is_tracing", _false)
_raw_stream = getattr(_C, "_cuda_getCurrentRawStream", None)
_inference_mode = torch.is_inference_mode_enabled
_bump = getattr(getattr(torch.autograd, "graph", None), "increment_version", None)
_BF16_DTYPE = torch.bfloat16
_CONTIGUOUS = torch.contiguous_format


def _tuple_bump():
    """torch._C._increment_version where it takes a tuple of tensors (what increment_version
    hands it on torch 2.x: one C call for all mutated tensors, no Python frame); an empty tuple
    shows it without touching a tensor. None elsewhere (then increment_version per tensor)."""
    f = getattr(_C, "_increment_version", None)
    if f is None or _bump is None:
        return None
    try:
        f(())
    except Exception:  # noqa: BLE001 - older signature (one tensor): not this shortcut
        return None
    return f


_bump_tuple = _tuple_bump()
# Forward-mode AD: inside a dual level the op's route carries (or refuses) tangents; the fast
# path would drop them.
_forward_ad = getattr(torch.autograd, "forward_ad", None)


def _bump_mutated(ops, out):
    """What the registered op's ADInplaceOrView layer does for its mutated arguments once it has
    run: their version counters bumped (not in inference mode). out: the output written (ops
    may hold None for it)."""
    if not _torch_op.registered or _inference_mode():
        return
    # Tensors only (an optional output not given is None): torch refuses a None in the tuple.
    mutated = [out]
    for i in _MUTATED_BESIDES_OUT:
        if ops[i] is not None:
            mutated.append(ops[i])
    if _bump_tuple is not None:
        _bump_tuple(tuple(mutated))
    elif _bump is not None:
        for t in mutated:
            _bump(t)

# Whether try_call may run at all (tests and `bench` compare both routes; the environment
# variable MINIMAX_H3_NVFP4_EAGER_FAST_PATH=0 turns it off for a process), and the calls each
# route ran (_torch_op.stats).
enabled = os.environ.get("MINIMAX_H3_NVFP4_EAGER_FAST_PATH", "1") != "0"
stats = _torch_op.stats



def _word(name):
    """The index of an H3Array field's data pointer in the struct seen as 64-bit words."""
    return getattr(_native.H3OutProjArgs, name).offset // 8


_WORDS = tuple(_word(n) for n in _NAMES)
_W_OUT = _WORDS[_OUT]
# The host-value rows (a Python float instead of a tensor) and their struct fields.
_VALUE_FIELDS = tuple((i, _NAMES[i] + "_value") for i in _VALUE_ROWS)
_W_ACTQ, _W_ACTSF, _W_FLAGS = (_word(n) for n in ("act_q", "act_sf", "ready_flags"))
_ALIGN = 256  # of each piece of the workspace (the C ABI needs 16)
_MAX_PLANS = 256
# The cached workspaces (module docstring): at most this many bytes each (M <= ~4000 at
# K = 7168; larger calls allocate per call, where host time is small beside the kernel's) and
# this many (device, stream) pairs per thread, sizes rounded up to _WS_QUANTUM.
WS_CACHE_MAX_BYTES = 16 << 20
WS_CACHE_MAX_ENTRIES = 4
_WS_QUANTUM = 64 << 10
_tls = threading.local()


def plain_eager():
    """True where nothing traces or compiles (the module docstring's first two points). The
    order matters: Dynamo folds _compiling() to True, so traced code never reaches the checks
    after it (it does not fold _is_tracing)."""
    return not (_compiling() or _function_modes() or _dispatch_modes() or _functorch()
                or _jit_tracing())


class _Plan:
    """The C ABI's argument struct for one device, set of operand shapes and options."""

    __slots__ = ("args", "ref", "words", "m", "n", "k", "out_shape", "out_like_residual",
                 "ws_bytes", "sf_off", "flags_off", "flag_bytes", "auto", "generation",
                 "emulation", "tile", "cached", "zeroed", "pointers")


def _round_up(x, to):
    return (x + to - 1) // to * to


def _build(cuda, dev, shapes, sm90, gemm, tile, internal_ws):
    """A new plan, or None where a shape is one the full route must reject (rank). shapes: per
    operand of _NAMES, None where not given (a host value, in place, an optional operand)."""
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
    for name, shape in zip(_NAMES, shapes):
        if shape is not None:
            setattr(a, name, _native.make_array(0, shape))
    # The operands whose addresses each call writes: those given, but out where allocated by
    # the call and act_q / act_sf on the GPU (the workspace's, _launch).
    p.pointers = tuple((i, _WORDS[i]) for i, shape in enumerate(shapes)
                       if shape is not None and i != _OUT and not (cuda and i in (_ACTQ, _ACTSF)))
    p.m, p.k = int(attn[0]), int(attn[1])
    p.n = int(q[0])
    p.out_shape = (p.m, p.n)
    # out allocated per call: torch.empty_like(residual) where residual has out's shape (half
    # the host time of torch.empty with a shape, a dtype and a device to parse).
    p.out_like_residual = shapes[_RES] is not None and tuple(shapes[_RES]) == p.out_shape
    if shapes[_OUT] is None:
        a.out = _native.make_array(0, p.out_shape)
    p.ws_bytes = p.sf_off = p.flags_off = p.flag_bytes = 0
    if cuda:
        flag_bytes = p.flag_bytes = int(_native.lib().h3_ready_flag_bytes(p.m))
        if internal_ws:
            a.act_q = _native.make_array(0, (p.m, p.k // 2))
            a.act_sf = _native.make_array(0, (p.m, p.k // 16))
            p.sf_off = _round_up(p.m * (p.k // 2), _ALIGN)
            p.flags_off = p.sf_off + _round_up(p.m * (p.k // 16), _ALIGN)
        p.ws_bytes = p.flags_off + flag_bytes
        a.ready_flags = _native.make_array(0, (flag_bytes,))
    p.auto = cuda and tile == _native.tiles()["auto"]
    p.generation = None
    p.tile = tile
    p.cached = False  # args.cached_workspace
    p.zeroed = False  # args.ready_flags_zeroed
    p.emulation = "fast" if sm90 == 1 else "faithful"
    p.args = a
    p.ref = ctypes.byref(a)
    p.words = memoryview(a).cast("B").cast("Q")
    return p


def _load():
    """The C entry points, bound once (the library loads on the first call)."""
    global _gpu, _cpu
    lib = _native.lib()
    _gpu, _cpu = lib.h3_out_proj_gpu, lib.h3_out_proj_cpu


_gpu = _cpu = None


class _Ws:
    """A cached workspace: its tensor, bytes and address, and the flag region [zero_off,
    zero_off + zero_bytes) known to be all zero on its stream (left so by the last call's
    kernel, ready_flags.h ResetAtExit; zero_off -1: none), where a call with the same region
    skips the flags' memset (args.ready_flags_zeroed)."""

    __slots__ = ("tensor", "size", "base", "zero_off", "zero_bytes")

    def __init__(self, tensor, size):
        self.tensor, self.size, self.base = tensor, size, tensor.data_ptr()
        self.zero_off = -1
        self.zero_bytes = 0


def _workspace(plan, dev, stream, device):
    """(entry, tensor, base address, new): the call's workspace. Cached per (thread, device,
    stream) where its size allows (the module docstring; entry: its _Ws), else a new one from
    torch's allocator (entry None); new: allocated by this call."""
    need = plan.ws_bytes
    if need <= WS_CACHE_MAX_BYTES:
        cache = getattr(_tls, "ws", None)
        if cache is None:
            cache = _tls.ws = _WsCache()
            with _ws_lock:
                _ws_caches[id(cache)] = cache
        key = (dev, stream)
        hit = cache.get(key)
        if hit is not None and hit.size >= need:
            if len(cache) > 1:
                cache[key] = cache.pop(key)  # least recently used first: the one evicted
            return hit, hit.tensor, hit.base, False
        if hit is None and len(cache) >= WS_CACHE_MAX_ENTRIES:
            # Dropped tensors go back to torch's allocator, stream-ordered on their streams.
            cache.pop(next(iter(cache)))
        size = min(_round_up(need, _WS_QUANTUM), WS_CACHE_MAX_BYTES)
        entry = cache[key] = _Ws(torch.empty((size,), dtype=torch.uint8, device=device), size)
        return entry, entry.tensor, entry.base, True
    ws = torch.empty((need,), dtype=torch.uint8, device=device)
    return None, ws, ws.data_ptr(), True


class _WsCache(dict):
    """One thread's cached workspaces: (device, stream) -> _Ws, least recently used first. A dict
    subclass so that _ws_caches can hold it weakly: a thread's
    cache goes with the thread."""


_ws_caches = weakref.WeakValueDictionary()  # id -> every live thread's _WsCache
_ws_lock = threading.Lock()


def release_workspaces(all_threads=False):
    """Drops this thread's cached workspaces, or every thread's (e.g. before
    torch.cuda.empty_cache(), which cannot return memory a cache holds); the next calls allocate
    them again. Safe while other threads call the op: a call holds its workspace tensor until it
    has enqueued its kernel, and the memory returns to torch stream-ordered."""
    if all_threads:
        with _ws_lock:
            caches = list(_ws_caches.values())
        for c in caches:
            c.clear()
    cache = getattr(_tls, "ws", None)
    if cache is not None:
        cache.clear()


def _launch(plan, dev, device, act_q, act_sf):
    """The GPU call of a plan whose operands are written: the stream, the workspace, the C
    call, and the call again with a workspace of its own where the stream is being captured."""
    w = plan.words
    stream = _raw_stream(dev) if _raw_stream is not None else (
        torch.cuda.current_stream(device).cuda_stream)
    entry, ws, base, new = _workspace(plan, dev, stream, device)
    if act_q is None:
        w[_W_ACTQ] = base
        w[_W_ACTSF] = base + plan.sf_off
    else:
        w[_W_ACTQ] = act_q.data_ptr()
        w[_W_ACTSF] = act_sf.data_ptr()
    w[_W_FLAGS] = base + plan.flags_off
    cached = entry is not None
    zeroed = cached and entry.zero_off == plan.flags_off and entry.zero_bytes >= plan.flag_bytes
    if cached != plan.cached:
        plan.args.cached_workspace = plan.cached = cached
    if zeroed != plan.zeroed:
        plan.args.ready_flags_zeroed = plan.zeroed = zeroed
    stats["tile"] = plan.tile
    if cached:
        # Unknown until the call returns (an exception in between leaves it unknown): this
        # call's act_q/act_sf may overwrite the recorded region.
        zero = entry.zero_off, entry.zero_bytes
        entry.zero_off = -1
    rc = _gpu(plan.ref, stream)
    if cached:
        # Succeeded: the kernel leaves its flags zero; refused (capture): nothing was written;
        # failed: nothing is known.
        if rc == 0:
            entry.zero_off, entry.zero_bytes = plan.flags_off, plan.flag_bytes
        elif rc == _native.CAPTURING:
            entry.zero_off, entry.zero_bytes = zero
    if rc == _native.CAPTURING:
        # The stream is being captured: the graph gets a workspace of its own, from the
        # capture's pool, freed (stream-ordered) when this call returns, as outside the cache.
        # One this call just allocated came from that pool already: it leaves the cache.
        if new:
            _tls.ws.pop((dev, stream), None)
        else:
            ws = torch.empty((plan.ws_bytes,), dtype=torch.uint8, device=device)
            base = ws.data_ptr()
            if act_q is None:
                w[_W_ACTQ] = base
                w[_W_ACTSF] = base + plan.sf_off
            w[_W_FLAGS] = base + plan.flags_off
        plan.args.cached_workspace = plan.cached = False
        plan.args.ready_flags_zeroed = plan.zeroed = False
        rc = _gpu(plan.ref, stream)
    if rc:
        _native.check(rc)
    # A workspace not cached goes back to torch's caching allocator here, stream-ordered on
    # the current stream (the one the kernel was enqueued on), as the full route's do.
    del ws


exec(compile(_route.route_checks_source(len(_ROWS), _REQUIRED, _NOT_ON_GPU, _VALUE_ROWS, _WRITTEN,
                                        _OUT, _ACTQ, _ACTSF, _RES),
             "<minimax_h3_nvfp4._eager: _route_checks>", "exec"))


def try_call(ops, sm90, gemm, tile):
    """The op's result, run here; or None where the call must take the full route (then
    nothing was written and nothing was allocated that outlives this call, the cached
    workspace aside). ops: the operands in _NAMES's order."""
    checked = _route_checks(ops, sm90, gemm, tile)  # noqa: F821 - defined by the exec above
    if checked is None:
        return None
    device, dev, out, act_q, act_sf, key = checked
    cuda = dev >= 0
    plans = getattr(_tls, "plans", None)
    if plans is None:
        plans = _tls.plans = {}
    plan = plans.get(key)
    if plan is None:
        plan = _build(cuda, dev, key[4:], sm90, gemm, tile, cuda and act_q is None)
        if plan is None:
            return None
        if len(plans) >= _MAX_PLANS:
            plans.clear()
        plans[key] = plan
    if _gpu is None:
        _load()
    if out is None:
        # empty_like would copy a named residual's names: torch.empty then, as the full route.
        residual = ops[_RES]
        out = (torch.empty_like(residual, memory_format=_CONTIGUOUS)
               if plan.out_like_residual and not residual.has_names()
               else torch.empty(plan.out_shape, dtype=_BF16_DTYPE, device=device))
    w = plan.words
    for i, word in plan.pointers:
        w[word] = ops[i].data_ptr()
    for i, field in _VALUE_FIELDS:
        if type(ops[i]) is float:
            setattr(plan.args, field, ops[i])
    w[_W_OUT] = out.data_ptr()
    if not cuda:
        stats["fast"] += 1
        rc = _cpu(plan.ref)
        if rc:
            _native.check(rc)
        _bump_mutated(ops, out)
        return out
    if plan.auto and plan.generation != tuning.generation:
        # Resolved once per plan and tuning-cache generation (a dict lookup after the first).
        # The generation asked in, not after: a reset() during resolve() leaves the plan stale,
        # so the next call asks again.
        asked_in = tuning.generation
        plan.tile = plan.args.tile = tuning.resolve(dev, plan.m, plan.n, plan.k, plan.emulation)
        plan.generation = asked_in
    stats["fast"] += 1
    _launch(plan, dev, device, act_q, act_sf)
    _bump_mutated(ops, out)
    return out
