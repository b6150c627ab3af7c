"""Host time of an eager call, package A against package B, on the GPU: the public function at
M = 1 (N = 5376, K = 7168, a new out, under no_grad) beside F.linear, in alternating child
processes (two builds of the package register the same torch op, so one process holds one).

The host's speed drifts by up to 2x between runs a minute apart, so each process times both
the op and F.linear in turn (rounds of 300 calls, unsynchronized) and reports the median of its
per-round ratios op / F.linear; the processes alternate A, B, A, B, ... Figures to read, not a
test.

    python3 python/tests/host_ab.py PKG_DIR_A PKG_DIR_B [PAIRS] [ROUNDS]
"""
import os, statistics, subprocess, sys

CHILD = r'''
import statistics, sys, time
import torch
import minimax_h3_nvfp4 as m3
torch.set_grad_enabled(False)
dev = torch.device("cuda", 0)
M, N, K, SETS = 1, 5376, 7168, 8
g = torch.Generator().manual_seed(0)
w = (torch.randn(N, K, generator=g) / K ** 0.5).to(torch.bfloat16)
q, sf, w_gs = m3.quantize_minimax_h3_o_weight_nvfp4(w)
q, sf, w_gs, wb = q.to(dev), sf.to(dev), w_gs.to(dev), w.to(dev)
a_gs = torch.tensor([600.0], device=dev)
gate = torch.randn(9, N, device=dev).to(torch.bfloat16)
xs = [torch.randn(M, K, device=dev).to(torch.bfloat16) for _ in range(SETS)]
rs = [torch.randn(M, N, device=dev).to(torch.bfloat16) for _ in range(SETS)]
ix = [torch.zeros(M, dtype=torch.int32, device=dev) for _ in range(SETS)]
f, lin = m3.minimax_h3_nvfp4_out_proj, torch.nn.functional.linear
op = lambda j: f(xs[j], q, sf, w_gs, a_gs, gate, ix[j], rs[j])
ln = lambda j: lin(xs[j], wb)
for fn in (op, ln):
    for j in range(50):
        fn(j % SETS)
torch.cuda.synchronize()
def round_us(fn):
    t = time.perf_counter()
    for j in range(300):
        fn(j % SETS)
    dt = time.perf_counter() - t
    torch.cuda.synchronize()
    return dt / 300 * 1e6
rows = []
for r in range(int(sys.argv[1])):
    pair = (op, ln) if r % 2 == 0 else (ln, op)
    t = {fn: round_us(fn) for fn in pair}
    rows.append((t[op], t[ln]))
print(statistics.median(a for a, _ in rows), statistics.median(b for _, b in rows),
      statistics.median(a / b for a, b in rows))
'''


def main():
    a, b = sys.argv[1], sys.argv[2]
    pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    rounds = sys.argv[4] if len(sys.argv) > 4 else "9"
    got = {a: [], b: []}
    for i in range(pairs):
        for pkg in ((a, b) if i % 2 == 0 else (b, a)):
            env = dict(os.environ, PYTHONPATH=pkg)
            out = subprocess.run([sys.executable, "-c", CHILD, rounds], env=env, check=True,
                                 capture_output=True, text=True).stdout.split()
            op_us, lin_us, ratio = map(float, out)
            got[pkg].append(ratio)
            print(f"{os.path.basename(pkg.rstrip('/')) or pkg:>12}  op {op_us:7.2f} us  "
                  f"F.linear {lin_us:7.2f} us  op/F.linear {ratio:.3f}", flush=True)
    for pkg in (a, b):
        r = sorted(got[pkg])
        print(f"host_ab: {pkg}: op/F.linear median {statistics.median(r):.3f} "
              f"(min {r[0]:.3f}, max {r[-1]:.3f}, {len(r)} processes)")
    ma, mb = statistics.median(got[a]), statistics.median(got[b])
    print(f"host_ab: B / A = {mb / ma:.3f}")


if __name__ == "__main__":
    main()
