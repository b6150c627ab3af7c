"""Timing on a CUDA device: the autotuner (`tune`) and the op against torch's bf16 GEMM (`bench`).

Both need torch with a CUDA device; on other machines they raise NoCudaError naming why. The
method is the C++ bench's: inputs rotated through enough copies to pass the L2 between calls,
CUDA events around a batch of calls, the median of the batches.

"""

import math
import statistics
import sys
import time

from . import _native
from . import hosttime
from . import tuning
from .diffusion_ops import minimax_h3_nvfp4_out_proj, quantize_minimax_h3_o_weight_nvfp4

G = 9  # MiniMax-H3's AdaLN gate rows
_FALLBACK_L2_BYTES = 128 << 20


class NoCudaError(RuntimeError):
    """No CUDA device this package can time on (the message says why)."""


def require_cuda(device=None):
    """(torch, device index), or NoCudaError naming what is missing."""
    try:
        import torch
    except ImportError:
        raise NoCudaError("torch is not importable by %s (tune and bench time the op on torch "
                          "CUDA tensors)" % sys.executable) from None
    count, reason = _native.device_count()
    if count == 0:
        raise NoCudaError(reason)
    if not torch.cuda.is_available():
        raise NoCudaError("torch %s cannot use CUDA (torch.cuda.is_available() is False), "
                          "although the library sees %d device(s)" % (torch.__version__, count))
    index = torch.cuda.current_device() if device is None else int(device)
    if not 0 <= index < count:
        raise ValueError("device must be a CUDA device ordinal in [0, %d), got %d"
                         % (count, index))
    return torch, index


class _Problem:
    """`copies` independent input sets of one shape on one device (the weight quantized once
    on the CPU, then copied), enough to pass the L2 between consecutive calls."""

    def __init__(self, torch, dev, m, n, k, seed=0):
        gen = torch.Generator().manual_seed(seed)
        w = (torch.randn(n, k, generator=gen) / math.sqrt(k)).to(torch.bfloat16)
        q, sf, w_gs = quantize_minimax_h3_o_weight_nvfp4(w)
        per_set = m * k * 2 + m * n * 4 + n * k // 2 + m * 4
        l2 = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or \
            _FALLBACK_L2_BYTES
        self.copies = max(2, min(32, math.ceil(2 * l2 / max(per_set, 1))))
        self.m, self.n, self.k = m, n, k
        self.dev = dev  # timing runs with it current: events and streams on the op's device
        self.w_bf16 = [w.to(dev) for _ in range(self.copies)]
        self.q = [q.to(dev) for _ in range(self.copies)]
        self.sf = [sf.to(dev) for _ in range(self.copies)]
        self.w_gs = w_gs.to(dev)
        self.act_gs = torch.tensor([2688.0 / 4.5], dtype=torch.float32, device=dev)
        self.gate = (torch.randn(G, n, generator=gen) * 0.5).to(torch.bfloat16).to(dev)
        self.x, self.res, self.idx, self.out = [], [], [], []
        for _ in range(self.copies):
            self.x.append(torch.randn(m, k, generator=gen).to(torch.bfloat16).to(dev))
            self.res.append(torch.randn(m, n, generator=gen).to(torch.bfloat16).to(dev))
            self.idx.append(torch.randint(0, G, (m,), generator=gen, dtype=torch.int32).to(dev))
            self.out.append(torch.empty(m, n, dtype=torch.bfloat16, device=dev))

    def op(self, i, tile="auto", sm90_emulation="faithful", new_out=False):
        """The op on input set i, into its out buffer (new_out: into a new tensor, the plain
        call's allocation)."""
        return minimax_h3_nvfp4_out_proj(
            self.x[i], self.q[i], self.sf[i], self.w_gs, self.act_gs, self.gate, self.idx[i],
            self.res[i], out=None if new_out else self.out[i], tile=tile,
            sm90_emulation=sm90_emulation)

    def gemm(self, i):
        return self.x[i] @ self.w_bf16[i].t()

    def unfused(self, i):
        update = self.gate.index_select(0, self.idx[i]) * (self.x[i] @ self.w_bf16[i].t())
        return self.res[i] + update


def device_ms(torch, problem, fn, reps):
    """Median over `reps` batches of one call per input copy, ms per call (CUDA events)."""
    with torch.cuda.device(problem.dev):
        return _device_ms(torch, problem, fn, reps)


def _device_ms(torch, problem, fn, reps):
    for i in range(problem.copies):  # warm-up: first-use costs, caches, the clocks
        fn(i)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(problem.copies):
            fn(i)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / problem.copies)
    return statistics.median(times)


def _progress(msg):
    print(msg, file=sys.stderr, flush=True)


def tune(m_buckets=tuning.DEFAULT_M_BUCKETS, n=5376, k=7168, device=None,
         sm90_emulation="faithful", reps=20, progress=_progress):
    """Times every registered tile config at each M of m_buckets on a CUDA device, records the
    winners in the tuning cache (tuning.cache_path()) and returns {m: (winner, {tile: ms})}."""
    torch, index = require_cuda(device)
    dev = torch.device("cuda", index)
    props = _native.device_properties(index)
    names = [t for t in _native.tiles() if t != "auto"]  # "auto" is an alias, not a config
    if props["major"] == 9 and sm90_emulation == "fast":
        names = names[:1]  # the fast sm_90 build has one config: nothing to choose
    results, winners, timings = {}, {}, {}
    for m in sorted(set(int(v) for v in m_buckets)):
        t0 = time.perf_counter()
        problem = _Problem(torch, dev, m, n, k)
        ms = {}
        for name in names:
            ms[name] = device_ms(torch, problem,
                                 lambda i, name=name: problem.op(i, name, sm90_emulation), reps)
        best = min(ms, key=ms.get)
        winners[m], timings[m] = best, ms[best]
        results[m] = (best, ms)
        progress("tune: M=%d: %s -> %s (%.1f s)" % (
            m, ", ".join("%s %.4f ms" % kv for kv in ms.items()), best,
            time.perf_counter() - t0))
        problem = None  # its buffers back to torch's pool before the next M
        torch.cuda.empty_cache()
    path = tuning.cache().record(props, n, k, sm90_emulation, winners, timings)
    progress("tune: wrote %s (%s)" % (path, tuning.device_key(props)))
    return results


def bench(ms_list=(1, 128, 1024, 4096), n=5376, k=7168, device=None,
          sm90_emulation="faithful", tile="auto", reps=20, out=sys.stdout, progress=_progress):
    """The op against torch's bf16 `x @ w.T` and the unfused bf16 pipeline
    `residual + gate[index] * (x @ w.T)`: device ms per call (medians), and host us per eager
    call of the op (the fast path, with a new out and into a given one; and through torch's
    op dispatch) and of F.linear, with op / F.linear (hosttime.eager_rows)."""
    torch, index = require_cuda(device)
    dev = torch.device("cuda", index)
    print("bench: cuda:%d %s, %s; N=%d K=%d, tile=%s, median of %d batches" % (
        index, torch.cuda.get_device_name(dev), _backend(index, sm90_emulation), n, k, tile,
        reps), file=out)
    print("%7s %10s %10s %10s %8s %8s | %s" % (
        "M", "op ms", "gemm ms", "unfused", "gemm/op", "unf/op",
        "host us per eager call: op, op(out=), op via torch's op dispatch, F.linear, "
        "op/F.linear"), file=out)
    rows = []
    for m in ms_list:
        t0 = time.perf_counter()
        p = _Problem(torch, dev, int(m), n, k)
        op = lambda i: p.op(i, tile, sm90_emulation)  # noqa: E731
        op_new_out = lambda i: p.op(i, tile, sm90_emulation, new_out=True)  # noqa: E731
        with torch.no_grad():
            t_op = device_ms(torch, p, op, reps)
            t_gemm = device_ms(torch, p, p.gemm, reps)
            t_unf = device_ms(torch, p, p.unfused, reps)
            h = hosttime.eager_rows(torch, p, op, op_new_out)
        rows.append((m, t_op, t_gemm, t_unf, h))
        print("%7d %10.4f %10.4f %10.4f %8.2f %8.2f | %7.1f %7.1f %7.1f %7.1f %7.2f" % (
            m, t_op, t_gemm, t_unf, t_gemm / t_op, t_unf / t_op, h["op"], h["op_out"],
            h["full"], h["linear"], h["ratio"]), file=out, flush=True)
        progress("bench: M=%d done (%.1f s)" % (m, time.perf_counter() - t0))
        p = None
        torch.cuda.empty_cache()
    for m, _, _, _, h in rows:
        if m == 1:
            print("host time per eager call at M=1: %s (op %.1f us with a new out, %.1f us into "
                  "a given one; F.linear %.1f us in the same rounds; op / F.linear %.2f, the "
                  "median of the rounds' ratios; target <= ~%.0f us, F.linear's level)" % (
                      hosttime.verdict(h["op"] <= hosttime.HOST_TARGET_US), h["op"],
                      h["op_out"], h["linear"], h["ratio"], hosttime.HOST_TARGET_US), file=out)
    return rows


def _backend(index, sm90_emulation):
    from .diffusion_ops import backend_name
    return backend_name(index, sm90_emulation)
