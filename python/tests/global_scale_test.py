"""The global scales the package computes (docs/contract.md section 5): RN(RN(1 / amax) * 2688),
FlashInfer's `(448 * 6) / amax` as PyTorch evaluates it, and not the one division
RN(2688 / amax), on a table of amax where the two differ (found by search with NumPy float32).
calibration.act_global_scale through the NumPy path (bf16 bits, float16 where exact, float32,
float64) and the torch path (CPU, and CUDA where present), the headroom's true division after it;
quantize_minimax_h3_o_weight_nvfp4 (the C++ quantizer behind the C ABI) on the same table and on
testdata's goldens made for it. The table's rows are core/global_scale_test.cc's.
"""

import os
import struct
import unittest

import numpy as np

from minimax_h3_nvfp4 import bf16, calibration
from minimax_h3_nvfp4.diffusion_ops import quantize_minimax_h3_o_weight_nvfp4

try:
    import torch
except ImportError:  # the NumPy rows still run
    torch = None

F32 = np.float32


def f32(u):
    return struct.unpack("<f", struct.pack("<I", u))[0]


def bits(x):
    return int(np.asarray(x, F32).reshape(-1)[0:1].view(np.uint32)[0])


# (amax f32 bits, RN(RN(1/amax) * 2688) bits, RN(2688/amax) bits, why)
DIFFER = [
    (0x3FA00000, 0x45066667, 0x45066666, "1.25: one of 30 of 128 bf16 significands"),
    (0x3FE00000, 0x44C00001, 0x44C00000, "1.75: the division is exact (1536)"),
    (0x3E200000, 0x46866667, 0x46866666, "0.15625"),
    (0x3E300000, 0x46745D18, 0x46745D17, "0.171875"),
    (0x3DF50000, 0x46AF8AF8, 0x46AF8AF9, "0.11962890625: below the division"),
    (0x40E00000, 0x43C00001, 0x43C00000, "7"),
    (0x41200000, 0x43866667, 0x43866666, "10"),
    (0x41300000, 0x43745D18, 0x43745D17, "11"),
    (0x3F830000, 0x45242716, 0x45242715, "1.0234375"),
    (0x3FFA0000, 0x44AC0832, 0x44AC0831, "1.953125"),
    (0x4CE6C891, 0x37BA5B45, 0x37BA5B44, "f32 1.20997e8"),
    (0x32852D2A, 0x52217854, 0x52217853, "f32 1.55038e-8"),
    (0x05280001, 0x7F7FFFFF, 0x7F7FFFFE, "smallest amax with a finite scale"),
    (0x7F418280, 0x055E409C, 0x055E409A, "2.57e38: 1/amax subnormal, 2 ulp"),
    (0x7F47B01D, 0x05576042, 0x05576045, "2.65e38: 1/amax subnormal, 3 ulp"),
]
AGREE = [(0x40C00000, 0x43E00000), (0x40400000, 0x44600000), (0x45280000, 0x3F800000),
         (0x3F800000, 0x45280000), (0x7E800000, 0x06280000)]


def numpy_samples(amax):
    """(dtype name, sample holding -amax among smaller values) for each exact NumPy dtype."""
    a = F32(amax)
    base = np.array([[0.5, -0.25], [0.0, 0.125]], F32) * a  # |values| < amax, exact
    x = base.copy()
    x[1, 1] = -a
    out = [("float32", x), ("float64", x.astype(np.float64))]
    if F32(bf16.to_float32(bf16.from_float32(x))[1, 1]) == -a:
        out.append(("bf16 bits", bf16.from_float32(x)))
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)
    if np.isfinite(h).all() and F32(h[1, 1]) == -a:
        out.append(("float16", h))
    return out


class NumpyFormula(unittest.TestCase):
    def test_table_matches_numpy_float32(self):
        # The table's columns are what NumPy float32 gives for the two forms.
        with np.errstate(all="ignore"):
            for a, rcp, div, why in DIFFER:
                x = F32(f32(a))
                self.assertEqual(bits((F32(1) / x) * F32(2688)), rcp, why)
                self.assertEqual(bits(F32(2688) / x), div, why)
                self.assertNotEqual(rcp, div, why)

    def test_differ_table(self):
        for a, rcp, div, why in DIFFER:
            for what, sample in numpy_samples(f32(a)):
                got = calibration.act_global_scale(sample)
                self.assertEqual((got.dtype, got.shape), (np.dtype(F32), (1,)), why)
                self.assertEqual(bits(got), rcp, "%s, %s" % (why, what))
                self.assertNotEqual(bits(got), div, "%s, %s" % (why, what))

    def test_agree_table_and_zero(self):
        for a, want in AGREE:
            for what, sample in numpy_samples(f32(a)):
                self.assertEqual(bits(calibration.act_global_scale(sample)), want, what)
        self.assertEqual(bits(calibration.act_global_scale(np.zeros(4, F32))), 0x3F800000)

    def test_overflow_unchanged(self):
        # amax 0x05280000 (= 2688 / FLT_MAX rounded): both forms overflow; refused.
        with self.assertRaisesRegex(ValueError, r"sample's amax must be >= 2688 / FLT_MAX"):
            calibration.act_global_scale(np.array([f32(0x05280000)], F32))

    def test_headroom_is_a_true_division_after(self):
        for a, rcp, _, why in DIFFER[:6]:
            for h in (1.25, 2.0, 3.0, 10.0):
                want = bits(np.array([F32(f32(rcp)) / F32(h)], F32))
                got = calibration.act_global_scale(np.array([f32(a)], F32), h)
                self.assertEqual(bits(got), want, "%s, h %r" % (why, h))


def testdata_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.environ.get("H3_TESTDATA"), os.path.join(os.path.dirname(os.path.dirname(here)),
                                                          "testdata")):
        if d and os.path.exists(os.path.join(d, "weight_bf16_rcp_gs.npy")):
            return d
    raise unittest.SkipTest("testdata/ not found (set H3_TESTDATA)")


class WeightQuantizer(unittest.TestCase):
    def test_differ_table(self):
        for a, rcp, div, why in DIFFER:
            w = np.zeros((2, 64), F32)
            w[1, 9] = -f32(a)
            samples = [("float32", w)]
            if F32(bf16.to_float32(bf16.from_float32(w))[1, 9]) == -f32(a):
                samples.append(("bf16 bits", bf16.from_float32(w)))
            for what, x in samples:
                _, _, gs = quantize_minimax_h3_o_weight_nvfp4(x)
                self.assertEqual(bits(gs), rcp, "%s, %s" % (why, what))
                self.assertNotEqual(bits(gs), div, why)
                if torch is not None and what == "float32":
                    _, _, gt = quantize_minimax_h3_o_weight_nvfp4(torch.from_numpy(x))
                    self.assertEqual(bits(gt.numpy()), rcp, "%s, torch" % why)

    def test_goldens(self):
        # make_goldens.py's cases whose amax makes the two forms differ (its independent
        # implementation of section 5).
        d = testdata_dir()
        for case in ("weight_bf16_rcp", "weight_f32_rcp_huge"):
            g = {x: np.load(os.path.join(d, "%s_%s.npy" % (case, x)))
                 for x in ("w", "q", "sf", "gs")}
            q, sf, gs = quantize_minimax_h3_o_weight_nvfp4(g["w"])
            np.testing.assert_array_equal(q, g["q"])
            np.testing.assert_array_equal(sf, g["sf"])
            self.assertEqual(bits(gs), bits(g["gs"]), case)
        self.assertEqual(bits(np.load(os.path.join(d, "weight_bf16_rcp_gs.npy"))), 0x46745D18)
        self.assertEqual(bits(np.load(os.path.join(d, "weight_f32_rcp_huge_gs.npy"))), 0x05576042)


@unittest.skipIf(torch is None, "torch is not importable")
class TorchFormula(unittest.TestCase):
    def devices(self):
        return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

    def test_differ_table(self):
        for dev in self.devices():
            for a, rcp, div, why in DIFFER:
                for what, sample in numpy_samples(f32(a)):
                    if what == "bf16 bits":
                        t = torch.from_numpy(sample.view(np.int16)).view(torch.bfloat16)
                    else:
                        t = torch.from_numpy(sample)
                    got = calibration.act_global_scale(t.to(dev))
                    self.assertEqual((got.dtype, tuple(got.shape), got.device.type),
                                     (torch.float32, (1,), dev), why)
                    self.assertEqual(bits(got.cpu().numpy()), rcp, "%s, %s %s" % (why, what, dev))
                    self.assertNotEqual(bits(got.cpu().numpy()), div, why)

    def test_flashinfer_expression(self):
        # The evidence, measured on this machine's torch: FlashInfer's literal expression gives
        # the contract's bits (Tensor.__rtruediv__ is reciprocal() * other), a tensor numerator
        # the one division.
        for dev in self.devices():
            for a, rcp, div, why in DIFFER:
                amax = torch.tensor(f32(a), dtype=torch.float32, device=dev)
                self.assertEqual(bits(((448 * 6) / amax).cpu().numpy()), rcp, why)
                self.assertEqual(bits((448.0 * 6.0 / amax).cpu().numpy()), rcp, why)
                self.assertEqual(bits((torch.tensor(2688.0, device=dev) / amax).cpu().numpy()),
                                 div, why)

    def test_zero_and_headroom(self):
        for dev in self.devices():
            self.assertEqual(bits(calibration.act_global_scale(
                torch.zeros(3, device=dev)).cpu().numpy()), 0x3F800000)
            for a, rcp, _, why in DIFFER[:6]:
                t = torch.tensor([f32(a)], device=dev)
                for h in (1.25, 3.0):
                    want = bits(np.array([F32(f32(rcp)) / F32(h)], F32))
                    got = calibration.act_global_scale(t, h)
                    self.assertEqual(bits(got.cpu().numpy()), want, "%s, h %r" % (why, h))


if __name__ == "__main__":
    unittest.main()
