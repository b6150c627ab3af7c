"""Where an eager call's host time goes (GPU, torch): the public function, _eager.try_call, the
C ABI call alone with a prebuilt struct, the allocations, the Python with the C call stubbed,
and F.linear, at M = 1 (N = 5376, K = 7168). Median of 5 rounds of 300 calls, no
synchronization inside a round. Figures to read, not a test.

    PYTHONPATH=PKG_DIR python3 python/tests/host_breakdown.py [faithful|fast]
"""
import ctypes, sys, time, torch
import minimax_h3_nvfp4 as m3
from minimax_h3_nvfp4 import _eager, _native
dev = torch.device("cuda", 0)
M, N, K = 1, 5376, 7168
x = torch.randn(M, K, device=dev).to(torch.bfloat16)
q = torch.zeros(N, K // 2, dtype=torch.uint8, device=dev)
sf = torch.full(((N + 127) // 128 * 128, (K // 16 + 3) // 4 * 4), 0x38, dtype=torch.uint8, device=dev)
w_gs = torch.ones(1, device=dev); a_gs = torch.ones(1, device=dev)
gate = torch.randn(9, N, device=dev).to(torch.bfloat16)
idx = torch.zeros(M, dtype=torch.int32, device=dev)
res = torch.randn(M, N, device=dev).to(torch.bfloat16)
wb = torch.randn(N, K, device=dev).to(torch.bfloat16)
emu = sys.argv[1] if len(sys.argv) > 1 else "faithful"
def per_call(fn, calls=300):
    r = []
    for _ in range(5):
        torch.cuda.synchronize(); t0 = time.perf_counter()
        for _ in range(calls): fn()
        t1 = time.perf_counter(); torch.cuda.synchronize(); r.append((t1 - t0) / calls * 1e6)
    r.sort(); return r[2]
pub = lambda: m3.minimax_h3_nvfp4_out_proj(x, q, sf, w_gs, a_gs, gate, idx, res, sm90_emulation=emu)
tile = _native.tiles()["auto"]
sm90 = 1 if emu == "fast" else 0
tc = lambda: _eager.try_call(x, q, sf, w_gs, a_gs, gate, idx, res, None, None, None, sm90, 0, tile)
pub(); tc(); torch.cuda.synchronize()
rows = [("public function", per_call(pub)), ("_eager.try_call", per_call(tc))]
plan = next(iter(_eager._tls.plans.values()))
ws = torch.empty((plan.ws_bytes,), dtype=torch.uint8, device=dev)
out = torch.empty((M, N), dtype=torch.bfloat16, device=dev)
w = plan.words; base = ws.data_ptr()
w[_eager._W_ACTQ] = base; w[_eager._W_ACTSF] = base + plan.sf_off; w[_eager._W_FLAGS] = base + plan.flags_off
w[_eager._W_OUT] = out.data_ptr()
lib = _native.lib(); stream = torch._C._cuda_getCurrentRawStream(0); ref = plan.ref
f = lib.h3_out_proj_gpu
rows.append(("C ABI h3_out_proj_gpu alone", per_call(lambda: f(ref, stream))))
rows.append(("ctypes trivial call (h3_ready_flag_bytes)", per_call(lambda: lib.h3_ready_flag_bytes(1))))
rows.append(("1x torch.empty (out)", per_call(lambda: torch.empty((M, N), dtype=torch.bfloat16, device=dev))))
rows.append(("2x torch.empty (out, ws)", per_call(lambda: (torch.empty((M, N), dtype=torch.bfloat16, device=dev), torch.empty((plan.ws_bytes,), dtype=torch.uint8, device=dev)))))
rows.append(("torch.cuda memset-like (zero_ of 64 B)", per_call(lambda: ws[:64].zero_())))
class Stub:
    def __getattr__(self, n): return lambda *a: 0
real = _native.lib; _native.lib = lambda: Stub()
real_gpu = getattr(_eager, "_gpu", None)
if hasattr(_eager, "_load"): _eager._load(); real_gpu = _eager._gpu; _eager._gpu = lambda *a: 0
rows.append(("try_call with the C call stubbed", per_call(tc)))
rows.append(("public function with the C call stubbed", per_call(pub)))
_native.lib = real
if hasattr(_eager, "_load"): _eager._gpu = real_gpu
rows.append(("F.linear bf16 [1,7168]x[5376,7168]", per_call(lambda: torch.nn.functional.linear(x, wb))))
print("host us per call, M=1, %s, torch %s:" % (emu, torch.__version__))
for name, v in rows: print("  %-45s %7.1f" % (name, v))
