"""Host time of eager calls (`bench`): per call against torch's F.linear, and a fresh process's
first call (`bench --first-call`). Figures to read, not tests: speed is judged by benchmarks.

Targets (issue 19): <= ~20 us of host time per eager call at M = 1 (F.linear's level: the issue
measured F.linear at 18 us on the H200; its host measures 13-22 us from run to run, hence the
same-round ratio), and the first call of a fresh process within ~100 ms of
`import minimax_h3_nvfp4` (torch's own CUDA initialization aside) with none of the compiler stack
imported.
"""

import json
import os
import statistics
import subprocess
import sys
import time

HOST_TARGET_US = 20.0
FIRST_CALL_TARGET_MS = 100.0
# Modules whose import on an eager call is what the first-call target is about.
HEAVY = ("torch._dynamo", "torch._inductor", "sympy", "triton", "torch.distributed.fsdp",
         "torch._subclasses.fake_tensor")


def verdict(ok):
    return "PASS" if ok else "FAIL"


def _round_us(torch, fn, copies, calls):
    """Host time per call, us, of one round: `calls` calls without synchronization between
    them, after a synchronization."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for j in range(calls):
        fn(j % copies)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def interleaved_rounds(torch, variants, copies, rounds, calls=300, warmup_calls=None):
    """{name: [host us per call, one per round]}: every variant timed once per round (one
    _round_us), in turn, in reverse order every other round, so no variant always follows the
    same one. This host's speed moves by up to 2x between runs a minute apart: variants timed
    in separate phases are not comparable, within a round they are (median_ratio).

    variants: (name, context or None, fn(i)); the context (reusable) is entered around each of
    the variant's rounds. A warm-up round of warmup_calls (default: copies) calls per variant
    comes first, not kept."""
    got = {name: [] for name, _, _ in variants}
    order = list(variants)
    for r in range(rounds + 1):
        for name, ctx, fn in (order if r % 2 == 0 else order[::-1]):
            n = (warmup_calls or copies) if r == 0 else calls
            if ctx is None:
                v = _round_us(torch, fn, copies, n)
            else:
                with ctx:
                    v = _round_us(torch, fn, copies, n)
            if r:
                got[name].append(v)
    return got


def median_ratio(a, b):
    """The median of the rounds' ratios a[r] / b[r]."""
    return statistics.median(x / y for x, y in zip(a, b))


class _FastPath:
    """The eager fast path on or off for a round (_eager.enabled), restored after."""

    def __init__(self, on):
        self.on = on

    def __enter__(self):
        from . import _eager
        self.saved, _eager.enabled = _eager.enabled, self.on

    def __exit__(self, *exc):
        from . import _eager
        _eager.enabled = self.saved


def eager_rows(torch, problem, op, op_new_out, rounds=11, calls=300):
    """Host us per eager call for one problem (interleaved_rounds): a dict of medians over
    `rounds` rounds, "op" (the fast path, a new out per call: the plain call), "op_out" (out
    given), "full" (torch's op dispatch) and "linear" (F.linear), and "ratio", the median of the
    rounds' op / linear."""
    lin = torch.nn.functional.linear
    linear = lambda i: lin(problem.x[i], problem.w_bf16[i])  # noqa: E731
    on, off = _FastPath(True), _FastPath(False)
    variants = [("op", on, op_new_out), ("op_out", on, op), ("full", off, op),
                ("linear", on, linear)]
    with torch.cuda.device(problem.dev):
        got = interleaved_rounds(torch, variants, problem.copies, rounds, calls)
    rows = {k: statistics.median(v) for k, v in got.items()}
    rows["ratio"] = median_ratio(got["op"], got["linear"])
    return rows


_CHILD = r"""
import json, sys, time
t_start = time.perf_counter()
import torch
dev = torch.device("cuda", int(sys.argv[1]))
m, n, k, tile, emu = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
torch.cuda.init()
x = torch.randn(m, k, device=dev).to(torch.bfloat16)
q = torch.zeros(n, k // 2, dtype=torch.uint8, device=dev)
sf = torch.full(((n + 127) // 128 * 128, (k // 16 + 3) // 4 * 4), 0x38, dtype=torch.uint8,
                device=dev)
w_gs = torch.ones(1, device=dev)
a_gs = torch.ones(1, device=dev)
gate = torch.randn(9, n, device=dev).to(torch.bfloat16)
idx = torch.zeros(m, dtype=torch.int32, device=dev)
res = torch.randn(m, n, device=dev).to(torch.bfloat16)
torch.cuda.synchronize()
heavy = json.loads(sys.argv[7])
def loaded():
    return [h for h in heavy if h in sys.modules]
before_import = loaded()
t0 = time.perf_counter()
import minimax_h3_nvfp4
from minimax_h3_nvfp4 import _eager
_eager.enabled = sys.argv[8] == "fast"
t1 = time.perf_counter()
after_import = loaded()
out = minimax_h3_nvfp4.minimax_h3_nvfp4_out_proj(x, q, sf, w_gs, a_gs, gate, idx, res,
                                                 tile=tile, sm90_emulation=emu)
torch.cuda.synchronize()
t2 = time.perf_counter()
after_call = loaded()
out = minimax_h3_nvfp4.minimax_h3_nvfp4_out_proj(x, q, sf, w_gs, a_gs, gate, idx, res,
                                                 tile=tile, sm90_emulation=emu)
torch.cuda.synchronize()
t3 = time.perf_counter()
print(json.dumps({
    "torch": torch.__version__, "torch_and_cuda_init_ms": (t0 - t_start) * 1e3,
    "import_ms": (t1 - t0) * 1e3, "first_call_ms": (t2 - t1) * 1e3,
    "second_call_ms": (t3 - t2) * 1e3, "loaded_by_torch": before_import,
    "loaded_by_import": [h for h in after_import if h not in before_import],
    "loaded_by_first_call": [h for h in after_call if h not in after_import],
    "routes": _eager.stats}))
"""


def first_call(device=0, m=1, n=5376, k=7168, tile="auto", sm90_emulation="faithful",
               out=sys.stdout, route="fast"):
    """Runs a fresh Python process that times its first call (after `import minimax_h3_nvfp4`,
    torch's CUDA initialization done before) and prints the figures with a PASS / FAIL line.
    route="full" turns the eager fast path off in that process (torch's op dispatch; for
    comparison, no verdict). Returns the child's figures (a dict), or raises RuntimeError with
    its output."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    r = subprocess.run([sys.executable, "-c", _CHILD, str(device), str(m), str(n), str(k), tile,
                        sm90_emulation, json.dumps(HEAVY), route],
                       capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("first-call process failed (exit %d):\n%s%s"
                           % (r.returncode, r.stdout, r.stderr))
    got = json.loads(r.stdout.strip().splitlines()[-1])
    what = "eager fast path" if route == "fast" else "torch's op dispatch (fast path off)"
    print("first call (fresh process, %s, torch %s, M=%d N=%d K=%d, tile=%s, %s): torch import "
          "+ CUDA init %.0f ms, import minimax_h3_nvfp4 %.1f ms, first call %.1f ms "
          "(synchronized), second call %.2f ms; routes %s" % (
              what, got["torch"], m, n, k, tile, sm90_emulation, got["torch_and_cuda_init_ms"],
              got["import_ms"], got["first_call_ms"], got["second_call_ms"], got["routes"]),
          file=out)
    print("  imported by torch + CUDA init: %s; by import minimax_h3_nvfp4: %s; by the first "
          "call: %s" % tuple(", ".join(v) or "none" for v in (
              got["loaded_by_torch"], got["loaded_by_import"], got["loaded_by_first_call"])),
          file=out)
    if route != "fast":
        return got
    ok = got["first_call_ms"] <= FIRST_CALL_TARGET_MS and not got["loaded_by_first_call"]
    print("first call: %s (%.1f ms after import, target <= %.0f ms; compiler stack imported "
          "by the call: %s)" % (verdict(ok), got["first_call_ms"], FIRST_CALL_TARGET_MS,
                                ", ".join(got["loaded_by_first_call"]) or "none"),
          file=out, flush=True)
    return got
