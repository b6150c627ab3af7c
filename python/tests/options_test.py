"""The op's quality options from Python (docs/contract.md sections 12-13): act_smooth,
lora_down, lora_up as keyword arguments of minimax_h3_nvfp4_out_proj on the CPU (NumPy and torch
routes), against references written here from the contract; their validation by table; the GPU
route's refusal (the host API refuses them before any CUDA call, so it is testable here)."""

import ctypes
import unittest

import numpy as np

from minimax_h3_nvfp4 import bf16
from minimax_h3_nvfp4.diffusion_ops import minimax_h3_nvfp4_out_proj

try:
    import torch
except ImportError:
    torch = None

OP = "minimax_h3_nvfp4_out_proj"


def case(m=37, n=128, k=256, g=3, seed=0):
    """Random operands: bf16 activations, a random weight (codes and swizzled scale bytes
    straight, no quantizer needed), gate indices with out-of-range ones."""
    from minimax_h3_nvfp4 import _native
    rng = np.random.default_rng(seed)
    x = bf16.from_float32(rng.standard_normal((m, k), dtype=np.float32) * 4)
    wq = rng.integers(0, 256, (n, k // 2), dtype=np.uint8)
    sf = rng.choice(np.array([0x30, 0x38, 0x40], np.uint8),
                    int(_native.lib().h3_swizzled_scale_bytes(n, k)))
    gate = bf16.from_float32(rng.standard_normal((g, n), dtype=np.float32))
    gi = rng.integers(-1, g + 1, m).astype(np.int32)
    res = bf16.from_float32(rng.standard_normal((m, n), dtype=np.float32))
    return [x, wq, sf, np.float32(0.5), np.array([3.0], np.float32), gate, gi, res]


def branch(rng, n, k, r):
    down = bf16.from_float32(rng.integers(-3, 4, (r, k)).astype(np.float32))
    up = bf16.from_float32(rng.integers(-3, 4, (n, r)).astype(np.float32) / 8)
    return down, up


def smooth_np(x, s):
    """Section 12: x' = bf16(f32(x) * s), the product rounded to binary32 (NumPy float32)."""
    return bf16.from_float32((bf16.to_float32(x) * s).astype(np.float32))


def run(ops, **kw):
    m, k = ops[0].shape
    act_q = np.zeros((m, k // 2), np.uint8)
    act_sf = np.zeros((m, k // 16), np.uint8)
    out = minimax_h3_nvfp4_out_proj(*ops, act_q=act_q, act_sf=act_sf, **kw)
    return out, act_q, act_sf


class SmoothingTest(unittest.TestCase):

    def test_equals_the_unfused_pipeline(self):
        # Contract section 12: op(x, act_smooth=s) is op(bf16(x * s)) byte for byte (out, act_q,
        # act_sf), whatever the factors: signs, zeros, subnormals, large ones.
        ops = case()
        k = ops[0].shape[1]
        rng = np.random.default_rng(1)
        table = {
            "random": (rng.standard_normal(k) * 2).astype(np.float32),
            "ones": np.ones(k, np.float32),
            "zeros and -1": np.where(np.arange(k) % 2 == 0, 0.0, -1.0).astype(np.float32),
            "subnormal and huge": np.where(np.arange(k) % 3 == 0, np.float32(1e-40),
                                           np.float32(3e38)).astype(np.float32),
        }
        for name, s in table.items():
            for gemm in ("fast", "exact"):
                with self.subTest(name, gemm=gemm):
                    got = run(ops, act_smooth=s, cpu_gemm=gemm)
                    want = run([smooth_np(ops[0], s)] + ops[1:], cpu_gemm=gemm)
                    for g, w in zip(got, want):
                        np.testing.assert_array_equal(g, w)

    def test_none_is_the_seed(self):
        ops = case(seed=2)
        for g, w in zip(run(ops, act_smooth=None, lora_down=None, lora_up=None), run(ops)):
            np.testing.assert_array_equal(g, w)


class BranchTest(unittest.TestCase):

    def test_zero_weight_against_the_contract(self):
        # A zero weight makes o = 0, so out is the branch alone through the epilogue, computed
        # here from section 13 on data where every sum is exact (small integers, eighths):
        # l = bf16(x' @ down^T), v = l @ up^T, t = bf16(gate * v), out = bf16(residual + t).
        for r in (16, 32, 64):
            for smooth in (False, True):
                with self.subTest(r=r, smooth=smooth):
                    rng = np.random.default_rng(r)
                    m, n, k, g = 29, 128, 256, 3
                    ops = case(m, n, k, g, seed=r)
                    ops[0] = bf16.from_float32(rng.integers(-4, 5, (m, k)).astype(np.float32))
                    ops[1] = np.zeros_like(ops[1])  # every code +0
                    s = (np.float32(2.0) ** rng.integers(-1, 2, k)).astype(np.float32)
                    down, up = branch(rng, n, k, r)
                    xs = smooth_np(ops[0], s) if smooth else ops[0]
                    lam = bf16.to_float32(xs).astype(np.float64) @ bf16.to_float32(
                        down).astype(np.float64).T
                    l = bf16.from_float32(lam.astype(np.float32))
                    v = (bf16.to_float32(l).astype(np.float64)
                         @ bf16.to_float32(up).astype(np.float64).T).astype(np.float32)
                    gi = ops[6]
                    inside = (gi >= 0) & (gi < g)
                    gate = bf16.to_float32(ops[5])[np.clip(gi, 0, g - 1)]
                    t = bf16.to_float32(bf16.from_float32((gate * v).astype(np.float32)))
                    want = bf16.from_float32((bf16.to_float32(ops[7]) + t).astype(np.float32))
                    want[~inside] = ops[7][~inside]
                    kw = {"lora_down": down, "lora_up": up}
                    if smooth:
                        kw["act_smooth"] = s
                    for gemm in ("fast", "exact"):
                        out, act_q, act_sf = run(ops, cpu_gemm=gemm, **kw)
                        np.testing.assert_array_equal(out, want)
                        # The branch never changes act_q / act_sf (section 13).
                        _, q0, sf0 = run([xs] + ops[1:], cpu_gemm=gemm)
                        np.testing.assert_array_equal(act_q, q0)
                        np.testing.assert_array_equal(act_sf, sf0)

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_torch_route_equals_numpy_route(self):
        ops = case(seed=5)
        rng = np.random.default_rng(5)
        n, k = ops[1].shape[0], ops[0].shape[1]
        down, up = branch(rng, n, k, 32)
        s = (rng.standard_normal(k) + 2).astype(np.float32)
        want = minimax_h3_nvfp4_out_proj(*ops, act_smooth=s, lora_down=down, lora_up=up)

        def t(a):
            if isinstance(a, np.ndarray) and a.dtype == np.uint16:
                return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
            return torch.from_numpy(np.asarray(a)) if isinstance(a, np.ndarray) else float(a)
        got = minimax_h3_nvfp4_out_proj(*(t(a) for a in ops), act_smooth=t(s), lora_down=t(down),
                                        lora_up=t(up))
        np.testing.assert_array_equal(got.view(torch.int16).numpy().view(np.uint16), want)


class ValidationTest(unittest.TestCase):
    """Each refusal names the argument, the expected and the given; nothing is written."""

    def test_table(self):
        ops = case(m=4)
        n, k = ops[1].shape[0], ops[0].shape[1]
        rng = np.random.default_rng(7)
        down, up = branch(rng, n, k, 16)
        s = np.ones(k, np.float32)
        bad_s = s.copy()
        bad_s[9] = np.inf
        bad_up = up.copy()
        bad_up[1, 2] = 0x7FC0
        table = [
            ("act_smooth float64", {"act_smooth": s.astype(np.float64)}, TypeError,
             r"act_smooth must be of dtype float32, got float64"),
            ("lora_down float32", {"lora_down": bf16.to_float32(down), "lora_up": up}, TypeError,
             r"lora_down must be of dtype bfloat16"),
            ("act_smooth [K+1]", {"act_smooth": np.ones(k + 1, np.float32)}, ValueError,
             r"act_smooth must have shape \[K\] = \[%d\]" % k),
            ("act_smooth Inf", {"act_smooth": bad_s}, ValueError,
             r"act_smooth: expected finite factors, got inf at \[9\]"),
            ("lora_down alone", {"lora_down": down}, ValueError,
             r"lora_up must be given together with lora_down"),
            ("lora_up alone", {"lora_up": up}, ValueError,
             r"lora_down must be given together with lora_up"),
            ("r = 8", {"lora_down": down[:8], "lora_up": up[:, :8].copy()}, ValueError,
             r"lora_down must be \[R, K\] with R a multiple of 16 in 16..64 \(the branch's "
             r"rank, contract section 13\), got R = 8"),
            ("r = 80", {"lora_down": np.zeros((80, k), np.uint16),
                        "lora_up": np.zeros((n, 80), np.uint16)}, ValueError, r"got R = 80"),
            ("lora_up transposed", {"lora_down": down, "lora_up": up.T.copy()}, ValueError,
             r"lora_up must have shape \[N, R\] = \[%d, 16\]" % n),
            ("lora_up NaN", {"lora_down": down, "lora_up": bad_up}, ValueError,
             r"lora_up: expected finite values, got nan at \[1, 2\]"),
        ]
        for name, kw, exc, message in table:
            with self.subTest(name):
                out = np.full((4, n), 0xABCD, np.uint16)
                with self.assertRaisesRegex(exc, message):
                    minimax_h3_nvfp4_out_proj(*ops, out=out, **kw)
                self.assertTrue((out == 0xABCD).all())


class GpuRefusalTest(unittest.TestCase):
    """The GPU host API's checks of the options before any CUDA call (the kernel computes both;
    a malformed branch is refused, never ignored): the C ABI's GPU entry here, with aligned host
    addresses that are never read. The computing itself: gpu_test."""

    def test_malformed_branch(self):
        from minimax_h3_nvfp4 import _native
        m, n, k = 1, 128, 256
        buf = np.zeros(1 << 20, np.uint8)
        base = (buf.ctypes.data + 255) // 256 * 256
        shapes = {"attn_out": (m, k), "o_weight_q": (n, k // 2),
                  "o_weight_sf": (int(_native.lib().h3_swizzled_scale_bytes(n, k)),),
                  "act_global_scale": (1,), "gate": (9, n), "gate_index": (m,),
                  "residual": (m, n), "out": (m, n)}
        rank = r"lora_down must be \[R, K\] with R a multiple of 16 in 16..64 .*got R = %d"
        table = [({"lora_up": (n, 32)},
                  r"lora_down must be given together with lora_up .*got lora_up alone$"),
                 ({"lora_down": (32, k)},
                  r"lora_up must be given together with lora_down .*got lora_down alone$"),
                 ({"lora_down": (24, k), "lora_up": (n, 24)}, rank % 24),
                 ({"lora_down": (80, k), "lora_up": (n, 80)}, rank % 80),
                 ({"lora_down": (32, k), "lora_up": (n, 16)}, r"lora_up")]
        for options, message in table:
            with self.subTest(message):
                a = _native.new_args()
                for i, (field, shp) in enumerate(list(shapes.items()) + list(options.items())):
                    setattr(a, field, _native.make_array(base + 65536 * i, shp))
                a.o_weight_global_scale_value = 1.0
                code = _native.lib().h3_out_proj_gpu(ctypes.byref(a), None)
                with self.assertRaisesRegex(ValueError, "^%s: .*%s" % (OP, message)):
                    _native.check(code)


if __name__ == "__main__":
    unittest.main()
