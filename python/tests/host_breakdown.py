"""Where an eager call's host time goes (GPU, torch), beside torch's own: the public function
(a new out; into a given out; the inputs rotating through 8 sets), the module beside nn.Linear,
_eager.try_call with the C call stubbed, the C ABI call alone with a prebuilt struct,
torch.empty_like of the output, and F.linear, at M = 1 (N = 5376, K = 7168), under no_grad.

Every variant is timed once per round (300 calls without synchronization), in turn, in reverse
order every other round; the host's speed moves by up to 2x between runs a minute apart, so
only figures of the same rounds compare: each row prints its median and the median of its
per-round ratios to F.linear. Figures to read, not a test.

    PYTHONPATH=PKG_DIR python3 python/tests/host_breakdown.py [faithful|fast] [ROUNDS]
"""
import ctypes, statistics, sys
import torch
import minimax_h3_nvfp4 as m3
from minimax_h3_nvfp4 import _eager, _native, hosttime

torch.set_grad_enabled(False)
dev = torch.device("cuda", 0)
M, N, K, SETS = 1, 5376, 7168, 8
emu = sys.argv[1] if len(sys.argv) > 1 else "faithful"
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 11
g = torch.Generator().manual_seed(0)
w = (torch.randn(N, K, generator=g) / K ** 0.5).to(torch.bfloat16)
q, sf, w_gs = m3.quantize_minimax_h3_o_weight_nvfp4(w)
qs, sfs, wbs = [q.to(dev) for _ in range(SETS)], [sf.to(dev) for _ in range(SETS)], \
    [w.to(dev) for _ in range(SETS)]
w_gs, a_gs = w_gs.to(dev), torch.tensor([600.0], device=dev)
gate = torch.randn(9, N, device=dev).to(torch.bfloat16)
xs = [torch.randn(M, K, device=dev).to(torch.bfloat16) for _ in range(SETS)]
rs = [torch.randn(M, N, device=dev).to(torch.bfloat16) for _ in range(SETS)]
ix = [torch.zeros(M, dtype=torch.int32, device=dev) for _ in range(SETS)]
outs = [torch.empty(M, N, dtype=torch.bfloat16, device=dev) for _ in range(SETS)]
mod = m3.MiniMaxH3NVFP4OutProj(w.to(dev), act_global_scale=600.0, sm90_emulation=emu)
lin_mod = torch.nn.Linear(K, N, bias=False, device=dev, dtype=torch.bfloat16)
f, lin = m3.minimax_h3_nvfp4_out_proj, torch.nn.functional.linear
tile, sm90 = _native.tiles()["auto"], 1 if emu == "fast" else 0

f(xs[0], qs[0], sfs[0], w_gs, a_gs, gate, ix[0], rs[0], sm90_emulation=emu)  # a plan, a workspace
torch.cuda.synchronize()
# The C ABI alone: a copy of the call's struct (the plan's own is rewritten by every call) with
# a workspace and an out of its own.
plan = next(iter(_eager._tls.plans.values()))
args = _native.H3OutProjArgs()
ctypes.memmove(ctypes.byref(args), plan.ref, ctypes.sizeof(args))
ws = torch.empty((plan.ws_bytes,), dtype=torch.uint8, device=dev)
words, base = memoryview(args).cast("B").cast("Q"), ws.data_ptr()
words[_eager._W_ACTQ], words[_eager._W_ACTSF] = base, base + plan.sf_off
words[_eager._W_FLAGS] = base + plan.flags_off
words[_eager._WORDS[_eager._OUT]] = outs[0].data_ptr()
args.cached_workspace = args.ready_flags_zeroed = 0  # zeroed on the stream by each call
gpu, ref, raw_stream = _native.lib().h3_out_proj_gpu, ctypes.byref(args), \
    torch._C._cuda_getCurrentRawStream


class Stubbed:
    """The C call replaced by a no-op for one round: the Python around it alone."""

    def __enter__(self):
        _eager._gpu = lambda *a: 0

    def __exit__(self, *exc):
        _eager._gpu = gpu


variants = [  # (name, context of the round or None, call j)
    ("public function, new out", None,
     lambda j: f(xs[j], qs[j], sfs[j], w_gs, a_gs, gate, ix[j], rs[j], sm90_emulation=emu)),
    ("public function, out given", None,
     lambda j: f(xs[j], qs[j], sfs[j], w_gs, a_gs, gate, ix[j], rs[j], out=outs[j],
                 sm90_emulation=emu)),
    ("module (2-D operands)", None, lambda j: mod(xs[j], rs[j], gate, ix[j])),
    ("nn.Linear module", None, lambda j: lin_mod(xs[j])),
    ("try_call, the C call stubbed", Stubbed(),
     lambda j: _eager.try_call((xs[j], qs[j], sfs[j], w_gs, a_gs, gate, ix[j], rs[j], None,
                                None, None, None, None, None), sm90, 0, tile)),
    ("C ABI h3_out_proj_gpu alone", None, lambda j: gpu(ref, raw_stream(0))),
    ("torch.empty_like(residual)", None, lambda j: torch.empty_like(rs[j])),
    ("F.linear bf16 [1,7168]x[5376,7168]", None, lambda j: lin(xs[j], wbs[j])),
]


# Round 0 is a whole round of warm-up (300 calls per variant), not kept.
got = hosttime.interleaved_rounds(torch, variants, SETS, rounds, 300, warmup_calls=300)
base = got[variants[-1][0]]
print("host us per call, M=1, %s, torch %s, %d rounds (median; x F.linear: the median of the "
      "rounds' ratios):" % (emu, torch.__version__, rounds))
for name, v in got.items():
    print("  %-45s %7.1f  x%.2f" % (name, statistics.median(v), hosttime.median_ratio(v, base)))
