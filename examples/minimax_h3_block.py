#!/usr/bin/env python3
"""A MiniMax-H3 block's two gated projections, bf16 vs NVFP4: attention out and FFN down.

diffusers' MiniMax-H3 transformer block computes, after attention and after the FFN,

    hidden = residual + gate_msa.index_select(0, adaln_indices) * attn.to_out[0](attn_output)
    hidden = hidden + gate_mlp.index_select(0, adaln_indices) * ff.down(ff_hidden)

in bf16 (a linear layer, then two bf16 elementwise ops). Both are the same work: an NVFP4 GEMM
plus a gated residual. This script replaces each with the fused NVFP4 op of this repository -
one call, the weight quantized once -

    proj = NVFP4GatedResidualLinear.from_linear(linear, calibration_sample=x)
    hidden = proj(x, residual, gate, adaln_indices)

(MiniMaxH3NVFP4OutProj for the attention out projection, N = 5376, K = 7168; the generic
module for the FFN down projection, N = 5376, K = the FFN width, 21504 = 4 x 5376 by default)
on synthetic inputs with outlier channels, and prints each one's error against the bf16
computation (max abs, relative L2, cosine; of the output and of the residual update
out - residual, with the float32 computation for scale) and the time of each.

    venv/bin/python examples/minimax_h3_block.py            # the venv of README.md "Python"
    ... --device cuda --m 4096 [--sm90_emulation fast]       # the GPU kernel
    ... --device cpu --m 256                                 # the CPU emulator

On the CPU it runs the bit-exact emulator (torch CPU tensors, or NumPy arrays where torch is not
installed; the emulator needs ~0.5 s per 1000 rows at K = 7168 on 2 cores, plus the reference
GEMM and the weight quantization); on a CUDA device the kernel (SM12x native, sm_90 validation
build).
"""

import argparse
import shlex
import sys
import time

# The README's venv: Debian's python3 (NumPy, torch) with the wheel installed.
VENV_RECIPE = """\
    ./bazelw run //python:wheel -- dist
    /usr/bin/python3 -m venv --system-site-packages venv
    venv/bin/python -m pip install --no-index dist/minimax_h3_nvfp4-*.whl
    venv/bin/python examples/minimax_h3_block.py"""


def missing(name, error, why=""):
    """Exits naming the interpreter that lacks `name` and the README's venv recipe."""
    sys.exit("minimax_h3_block: cannot import %s with %s (%s)%s. Run this example with an "
             "interpreter that has it, e.g. the venv of README.md \"Python\":\n%s%s"
             % (name, sys.executable, error, why, VENV_RECIPE,
                "".join(" " + shlex.quote(a) for a in sys.argv[1:])))


try:
    import numpy as np
    import minimax_h3_nvfp4
    from minimax_h3_nvfp4 import bf16, calibration
    from minimax_h3_nvfp4.diffusion_ops import (minimax_h3_nvfp4_out_proj,
                                                quantize_minimax_h3_o_weight_nvfp4)
except ImportError as e:
    missing(e.name or "minimax_h3_nvfp4", e)

try:
    import torch
except ImportError as e:  # the CPU run takes NumPy arrays then; --device cuda needs torch
    torch, torch_error = None, e

N, G = 5376, 9  # hidden size; 3 noise levels x 3 modalities
ATTN_K, HEADS = 7168, 56  # 56 heads x 128
FFN_WIDTH = 4 * N  # 21504, a multiple of 256 (the GPU's K granularity)


def synthetic(m, k, seed, kind):
    """float32 arrays, every value a bf16 value: the projection's input with outlier channels
    (attention outputs with per-head scales, or the FFN's GELU activations), an
    nn.Linear-like weight [N, k], the AdaLN gate table, adaln_indices, residual."""
    rng = np.random.default_rng(seed)
    if kind == "attention":
        head_scale = np.repeat(rng.uniform(0.5, 1.5, HEADS).astype(np.float32), k // HEADS)
        x = rng.standard_normal((m, k), dtype=np.float32) * head_scale
    else:  # GELU(tanh) of the up projection's output: skewed positive, a long right tail
        u = rng.standard_normal((m, k), dtype=np.float32) * np.float32(1.5)
        x = np.float32(0.5) * u * (1 + np.tanh(np.float32(0.7978845608) *
                                               (u + np.float32(0.044715) * u ** 3)))
    outliers = rng.choice(k, k // 200, replace=False)  # 0.5% of the channels
    x[:, outliers] *= rng.uniform(20.0, 60.0, outliers.size).astype(np.float32)
    w = rng.standard_normal((N, k), dtype=np.float32) * np.float32(1.0 / np.sqrt(k))
    gate = rng.standard_normal((G, N), dtype=np.float32) * np.float32(0.5)
    # Packed tokens of two samples at different noise levels; 80% video, 15% text, 5% audio.
    timestep_indices = np.where(np.arange(m) < m // 2, 0, 2)
    token_tags = rng.choice(3, m, p=[0.80, 0.15, 0.05])
    adaln_indices = (timestep_indices * 3 + token_tags).astype(np.int32)
    residual = rng.standard_normal((m, N), dtype=np.float32)
    r = bf16.round_float32
    return r(x), r(w), r(gate), adaln_indices, r(residual), outliers.size


def errors(got, want):
    """max abs, relative L2, cosine (float64)."""
    got = np.asarray(got, np.float64).ravel()
    want = np.asarray(want, np.float64).ravel()
    d = got - want
    return (float(np.max(np.abs(d))), float(np.linalg.norm(d) / np.linalg.norm(want)),
            float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want))))


class Projection:
    """One gated projection of the block: its name, input kind, K and gate's name."""

    def __init__(self, title, kind, k, gate, module):
        self.title, self.kind, self.k, self.gate, self.module = title, kind, k, gate, module


def projections(args):
    return [
        Projection("attention out projection (attn.to_out[0]) + gated residual", "attention",
                   ATTN_K, "gate_msa", "MiniMaxH3NVFP4OutProj"),
        Projection("FFN down projection + gated residual", "ffn", args.ffn_width, "gate_mlp",
                   "NVFP4GatedResidualLinear"),
    ]


def print_report(args, spec, backend, ref_name, outliers, t_quant, t_ref, t_op, timing, f32_out,
                 f32_upd, ref_out, nv_out, residual, quant_label):
    """The error table and the times. *_out: float32 [M, N] outputs; residual float32."""
    print("== MiniMax-H3 %s: M=%d tokens, N=%d, K=%d, G=%d (%s)"
          % (spec.title, args.m, N, spec.k, G, spec.gate))
    print("backend: %s" % backend)
    print("data: synthetic %s, %d outlier channels of %d (x20..x60), act_global_scale "
          "calibrated on them" % ("attention outputs" if spec.kind == "attention"
                                  else "GELU activations", outliers, spec.k))
    print()
    rows = [
        ("output, NVFP4 vs bf16", nv_out, ref_out),
        ("output, bf16 vs f32", ref_out, f32_out),
        ("update (out - residual), NVFP4 vs bf16", nv_out - residual, ref_out - residual),
        ("update (out - residual), NVFP4 vs f32", nv_out - residual, f32_upd),
        ("update (out - residual), bf16 vs f32", ref_out - residual, f32_upd),
    ]
    print("%-42s %12s %12s %12s" % ("error", "max abs", "rel L2", "cosine"))
    for name, got, want in rows:
        e = errors(got, want)
        print("%-42s %12.4g %12.4g %12.8f" % (name, e[0], e[1], e[2]))
    print()
    print("time (%s)" % timing)
    print("  %-52s %12s" % ("bf16: " + ref_name, fmt_time(t_ref)))
    print("  %-52s %12s" % ("NVFP4 fused op", fmt_time(t_op)))
    print("  %-52s %12s" % (quant_label, fmt_time(t_quant)))
    print()


def fmt_time(s):
    return "%.3f ms" % (s * 1e3) if s < 1.0 else "%.2f s" % s


def run_numpy(args, spec):
    """No torch: the functional API on NumPy arrays (bf16 as uint16 bit patterns)."""
    x, w, gate, idx, res, outliers = synthetic(args.m, spec.k, args.seed, spec.kind)
    xb, wb, gb, rb = (bf16.from_float32(a) for a in (x, w, gate, res))

    t0 = time.perf_counter()
    q, sf, w_gs = quantize_minimax_h3_o_weight_nvfp4(wb)
    t_quant = time.perf_counter() - t0
    act_gs = calibration.act_global_scale(xb)

    # The bf16 block: the GEMM in f32 (a bf16 Linear accumulates in f32 and rounds its output),
    # then bf16 elementwise ops, each rounded once.
    t0 = time.perf_counter()
    y = x @ w.T
    proj = bf16.round_float32(y)
    ref = bf16.round_float32(res + bf16.round_float32(gate[idx] * proj))
    t_ref = time.perf_counter() - t0
    f32_upd = gate[idx] * y
    f32_out = res + f32_upd

    minimax_h3_nvfp4_out_proj(xb[:8], q, sf, w_gs, act_gs, gb, idx[:8], rb[:8])  # warm-up
    t0 = time.perf_counter()
    out = minimax_h3_nvfp4_out_proj(xb, q, sf, w_gs, act_gs, gb, idx, rb)
    t_op = time.perf_counter() - t0
    print_report(args, spec, "the CPU emulator (bit-exact), NumPy arrays, no torch",
                 "NumPy f32 GEMM, bf16 roundings", outliers, t_quant, t_ref, t_op,
                 "one call, after a warm-up call of the op", f32_out, f32_upd, ref,
                 bf16.to_float32(out), res, "weight quantization (once, on the CPU)")


def run_torch(args, device, spec):
    """torch: the nn.Module in place of nn.Linear + the gated residual."""
    x, w, gate, idx, res, outliers = synthetic(args.m, spec.k, args.seed, spec.kind)
    dev = torch.device(device)
    tb = lambda a: torch.from_numpy(a).to(dev).to(torch.bfloat16)  # exact: bf16 values
    x_t, gate_t, res_t = tb(x), tb(gate), tb(res)
    idx_t = torch.from_numpy(idx).to(dev)
    linear = torch.nn.Linear(spec.k, N, bias=False, device=dev, dtype=torch.bfloat16)
    with torch.no_grad():
        linear.weight.copy_(tb(w))

    def block_bf16():
        # diffusers: residual + gate.index_select(0, adaln_indices) * linear(x)
        return res_t + gate_t.index_select(0, idx_t) * linear(x_t)

    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    proj = getattr(minimax_h3_nvfp4, spec.module).from_linear(
        linear, calibration_sample=x_t, sm90_emulation=args.sm90_emulation)
    sync()
    t_quant = time.perf_counter() - t0

    def block_nvfp4():
        return proj(x_t, res_t, gate_t, idx_t)

    with torch.no_grad():
        ref = block_bf16()
        out = block_nvfp4()
        y = x_t.float() @ linear.weight.float().t()
        f32_upd = gate_t.float().index_select(0, idx_t) * y
        f32_out = res_t.float() + f32_upd
        if dev.type == "cuda":
            t_ref, t_op = time_cuda(block_bf16, args.iters), time_cuda(block_nvfp4, args.iters)
            timing = "median of %d calls, CUDA events" % args.iters
            backend = "the GPU kernel, %s (%s)" % (minimax_h3_nvfp4.backend_name(
                dev, args.sm90_emulation), torch.cuda.get_device_name(dev))
        else:
            t_ref, t_op = time_cpu(block_bf16), time_cpu(block_nvfp4)
            timing = "one call after a warm-up call, each"
            backend = "the CPU emulator (bit-exact), torch CPU tensors"
    host = lambda t: t.float().cpu().numpy()
    print_report(args, spec, backend, "nn.Linear + gated residual (torch bf16)", outliers,
                 t_quant,
                 t_ref, t_op, timing, host(f32_out), host(f32_upd), host(ref), host(out),
                 host(res_t), "quantization + calibration (module build, %s)"
                 % ("GPU" if dev.type == "cuda" else "CPU"))


def time_cuda(fn, iters):
    for _ in range(3):
        fn()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    return float(np.median(times))


def time_cpu(fn):
    fn()  # warm-up (the emulator's scratch)
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                   help="auto: cuda where torch sees a GPU, else cpu")
    p.add_argument("--m", type=int, default=None,
                   help="tokens (default: 4096 on cuda, 256 on cpu)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--iters", type=int, default=20, help="timed calls on cuda")
    p.add_argument("--sm90_emulation", default="faithful", choices=["faithful", "fast"])
    p.add_argument("--ffn_width", type=int, default=FFN_WIDTH,
                   help="K of the FFN down projection (default %d = 4 x %d)" % (FFN_WIDTH, N))
    p.add_argument("--numpy", action="store_true",
                   help="on cpu, use NumPy arrays even where torch is installed")
    args = p.parse_args()
    device = args.device
    if device == "auto":
        device = "cuda" if torch is not None and torch.cuda.is_available() else "cpu"
    if device == "cuda" and torch is None:
        missing("torch", torch_error, "; --device cuda needs it")
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("minimax_h3_block: --device cuda needs a CUDA device, and torch %s with "
                 "CUDA (%s) sees none" % (torch.__version__, sys.executable))
    if args.m is None:
        args.m = 4096 if device == "cuda" else 256
    for spec in projections(args):
        if device == "cpu" and (torch is None or args.numpy):
            run_numpy(args, spec)
        else:
            run_torch(args, device, spec)


if __name__ == "__main__":
    main()
