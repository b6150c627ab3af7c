"""NVFP4 accuracy of the op with and without its quality options (docs/contract.md sections
12-13; issue 30 item 5): activation families through plain NVFP4, smoothing, a low-rank branch
and both, and static activation scales at several headrooms, against bf16 and f32 references.

    ./bazelw run //examples:accuracy -- --m 256            (CPU: the bit-exact emulator)
    venv/bin/python examples/accuracy.py --device cuda --m 4096

Each configuration is the module a user builds, NVFP4GatedResidualLinear.from_linear(linear,
calibration_sample=..., smooth_alpha=0.5 or None, lowrank=32 or 0), its scales set by
calibrate(sample, headroom); the op computes the options itself (act_smooth, lora_down,
lora_up). With --device cuda every configuration runs on the GPU kernel, which computes both
options (act_smooth, contract section 12; the low-rank branch, section 13); on the CPU, on the
emulator.

Families: gaussian; t(4) with log-normal channel scales and 0.5% outlier channels x30-60
(issue 30's H200 check); a user's activations (`--activations X.npy`, [rows, K], its first half
calibrates, its second is measured). The weight is a random [N, K] linear (`--weight W.npy` to
use one). Each configuration's scales come from a calibration batch distinct from the measured
one ("static", as a deployed layer has them); "dynamic" calibrates on the measured batch itself.
Error: rel_l2 = ||y - ref|| / ||ref|| over the whole output, ref = x @ W^T of the bf16 operands
rounded to bf16 (a bf16 linear) or kept in f32. The last line, for scripts:

    accuracy: plain rel_l2 A smooth+lowrank32 rel_l2 B

(the outlier family, static scales at the default headroom).
"""

import argparse
import sys

import numpy as np

try:
    import torch
except ImportError:  # the examples' convention: say what is missing, no traceback
    sys.stderr.write("accuracy.py: error: torch is required (README.md \"Python\")\n")
    sys.exit(1)

from minimax_h3_nvfp4 import NVFP4GatedResidualLinear

HEADROOMS = (1.0, 1.25, 1.5, 2.0)
DEFAULT_HEADROOM = 1.0
RANK = 32


def family(name, rows, k, gen, device):
    """(calibration batch, measured batch), bf16 [rows, k] each, same channel statistics."""
    if name == "gaussian":
        mk = lambda: torch.randn(rows, k, generator=gen)  # noqa: E731
    else:
        scale = torch.exp(torch.randn(k, generator=gen) * 0.5)
        idx = torch.randperm(k, generator=gen)[:max(1, k // 200)]
        scale[idx] *= 30 + 30 * torch.rand(len(idx), generator=gen)
        t4 = torch.distributions.StudentT(torch.tensor(4.0))

        def mk():
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
            return t4.sample((rows, k)) * scale
    return mk().to(torch.bfloat16).to(device), mk().to(torch.bfloat16).to(device)


class Config:
    """One way to run the layer: the module from_linear builds for weight w [N, K] from a
    calibration batch, with smoothing (SmoothQuant's alpha 0.5) and / or a rank-`rank` branch."""

    def __init__(self, name, w, calib, smooth, rank):
        self.name, self.calib = name, calib
        # On w's device, options included: the GPU kernel computes both (contract sections 12-13).
        n, k = w.shape
        linear = torch.nn.utils.skip_init(torch.nn.Linear, k, n, bias=False, dtype=w.dtype,
                                          device=w.device)
        with torch.no_grad():
            linear.weight.copy_(w)
        self.mod = NVFP4GatedResidualLinear.from_linear(
            linear, calibration_sample=calib, smooth_alpha=0.5 if smooth else None,
            lowrank=rank)

    def run(self, x, sample, headroom):
        """The layer on x with its static scale calibrated on sample (smoothed by the module
        as the op smooths x) with the headroom."""
        self.mod.calibrate(sample, headroom)
        n, m = self.mod.out_features, x.shape[0]
        gate = torch.ones(1, n, dtype=torch.bfloat16, device=x.device)
        gi = torch.zeros(m, dtype=torch.int32, device=x.device)
        res = torch.zeros(m, n, dtype=torch.bfloat16, device=x.device)
        # gate 1, residual 0: out = bf16(v), the projection as a bf16 linear returns it.
        return self.mod(x, res, gate, gi)


def rel_l2(y, ref):
    d = (y.double() - ref.double()).norm()
    return float(d / ref.double().norm())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--m", type=int, default=256, help="measured rows (tokens)")
    p.add_argument("--n", type=int, default=5376)
    p.add_argument("--k", type=int, default=7168)
    p.add_argument("--seed", type=int, default=30)
    p.add_argument("--activations", help="a user's activations, .npy [rows, K]")
    p.add_argument("--weight", help="a weight, .npy [N, K] (default: random)")
    a = p.parse_args(argv)
    dev = torch.device(a.device)
    gen = torch.Generator().manual_seed(a.seed)
    if a.weight:
        w = torch.from_numpy(np.load(a.weight).astype(np.float32)).to(torch.bfloat16)
        a.n, a.k = w.shape
    else:
        w = (torch.randn(a.n, a.k, generator=gen) / a.k ** 0.5).to(torch.bfloat16)
    w = w.to(dev)
    fams = ["gaussian", "outlier"]
    user = None
    if a.activations:
        u = torch.from_numpy(np.load(a.activations).astype(np.float32)).to(torch.bfloat16)
        half = u.shape[0] // 2
        user = (u[:half].to(dev), u[half:].to(dev))
        fams.append("user")
    print("accuracy: M = %d, N = %d, K = %d, device %s (%s), options in the op" % (
        a.m, a.n, a.k, a.device,
        "every config on the GPU kernel" if a.device == "cuda" else "the CPU emulator"))
    print("%-9s %-20s %-9s %12s %12s" % ("family", "config", "scale", "rel_l2 bf16",
                                          "rel_l2 f32"))
    headline = {}
    for fam in fams:
        calib, x = user if fam == "user" else family(fam, a.m, a.k, gen, dev)
        ref32 = x.float() @ w.float().t()
        ref16 = ref32.to(torch.bfloat16)
        configs = [Config("plain", w, calib, False, 0), Config("smooth", w, calib, True, 0),
                   Config("lowrank%d" % RANK, w, calib, False, RANK),
                   Config("smooth+lowrank%d" % RANK, w, calib, True, RANK)]
        for c in configs:
            scales = [("static %.3g" % h, c.calib, h) for h in HEADROOMS]
            scales.append(("dynamic", x, None))
            for label, sample, h in scales:
                if h not in (DEFAULT_HEADROOM, None) and c.name not in ("plain",
                                                                         "smooth+lowrank32"):
                    continue
                y = c.run(x, sample, 1.0 if h is None else h)
                e16, e32 = rel_l2(y, ref16), rel_l2(y, ref32)
                print("%-9s %-20s %-12s %9.4f %12.4f" % (fam, c.name, label, e16, e32))
                if h == DEFAULT_HEADROOM:
                    headline[(fam, c.name)] = e16
        sys.stdout.flush()
    print("accuracy: plain rel_l2 %.4f smooth+lowrank32 rel_l2 %.4f"
          % (headline[("outlier", "plain")], headline[("outlier", "smooth+lowrank32")]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
