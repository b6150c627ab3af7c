"""The quality options' Python side (docs/contract.md sections 12-13): smoothing factors, the
smoothed weight, the low-rank split, x' in torch equal to the contract's two roundings, the
value-projection fold, and calibration's headroom. Tables where the cases are data. Needs torch.
"""

import struct
import sys
import unittest

import numpy as np

try:
    import torch
except ImportError:
    sys.exit("quality_test: torch must be importable by %s, got ImportError" % sys.executable)

from minimax_h3_nvfp4 import calibration, quality  # noqa: E402


def f32_bits(f):
    return struct.unpack("<I", struct.pack("<f", f))[0]


def f32(u):
    return struct.unpack("<f", struct.pack("<I", u))[0]


def bf16_bits(t):
    return t.view(torch.int16).to(torch.int32) & 0xFFFF


class SmoothActivations(unittest.TestCase):
    # (x as float, s, want bf16 bits): contract section 12's table, by hand
    # (emulator/quality_test.cc holds the same cases against the C++ emulator).
    CASES = [
        (1.0, 2.0, 0x4000),
        (1.0, -1.0, 0xBF80),
        (-1.0, 0.0, 0x8000),
        (1.0 + 2 ** -7, f32(0x3F7F01FD), 0x3F80),  # binary32 then a bf16 tie: two roundings
        (1.0, f32(0x7F7FFFFF), 0x7F80),            # rounds up to Inf in bf16
        (1.0, f32(0x00080000), 0x0008),            # subnormal factor, bf16 subnormal
        (1.0, f32(0x00000200), 0x0000),            # underflows to +0
    ]

    def test_two_roundings_match_the_contract(self):
        for x, s, want in self.CASES:
            got = quality.smooth_activations(torch.tensor([[x]], dtype=torch.bfloat16),
                                             torch.tensor([s], dtype=torch.float32))
            self.assertEqual(int(bf16_bits(got)[0, 0]), want, (x, s))


class Factors(unittest.TestCase):
    def test_smoothquant_inverse_and_zero_channels(self):
        x = torch.tensor([[4.0, 0.0, 1.0], [-16.0, 0.0, 1.0]])
        w = torch.tensor([[1.0, 2.0, 0.0], [-4.0, 1.0, 0.0]])
        s = quality.smoothing_factors(x, w, alpha=0.5)
        # channel 0: sqrt(4) / sqrt(16) = 0.5; channels 1, 2: a zero amax gives 1.
        self.assertEqual(s.tolist(), [0.5, 1.0, 1.0])
        self.assertEqual(s.dtype, torch.float32)
        ws = quality.smooth_weight(w, s)
        self.assertEqual(ws[:, 0].tolist(), [2.0, -8.0])  # x' W'^T = x W^T

    def test_refusals(self):
        w = torch.ones(4, 8)
        cases = [
            (torch.ones(3, 7), w, 0.5, ValueError, "calibration_sample must have shape [..., K]"),
            (torch.ones(3, 8), w, 1.5, ValueError, "smooth_alpha must be in [0, 1]"),
            (torch.full((3, 8), float("inf")), w, 0.5, ValueError, "must be finite"),
            ([1.0], w, 0.5, TypeError, "calibration_sample must be a torch.Tensor"),
        ]
        for sample, weight, alpha, exc, words in cases:
            with self.assertRaises(exc) as cm:
                quality.smoothing_factors(sample, weight, alpha)
            self.assertIn(words, str(cm.exception))


class LowRank(unittest.TestCase):
    def test_split_recovers_a_low_rank_weight(self):
        gen = torch.Generator().manual_seed(0)
        for n, k, rank in [(64, 128, 16), (96, 64, 32), (128, 256, 64), (2304, 2112, 32)]:
            a = torch.randn(n, rank, generator=gen)
            b = torch.randn(rank, k, generator=gen)
            w = a @ b + 1e-3 * torch.randn(n, k, generator=gen)
            down, up, res = quality.lowrank_split(w, rank)
            self.assertEqual((tuple(down.shape), tuple(up.shape)), ((rank, k), (n, rank)))
            self.assertEqual((down.dtype, up.dtype), (torch.bfloat16, torch.bfloat16))
            # The residual is exactly w minus the rounded factors' product...
            self.assertTrue(torch.equal(res, w - up.float() @ down.float()))
            # ...and small: what is left is the noise plus bf16's rounding of the factors.
            self.assertLess(float(res.norm() / w.norm()), 0.02, (n, k, rank))

    def test_rank_must_be_the_contracts(self):
        for rank in (0, 8, 24, 80):
            with self.assertRaises(ValueError) as cm:
                quality.lowrank_split(torch.ones(32, 64), rank)
            self.assertIn("a multiple of 16 in 16..64", str(cm.exception))


class Fold(unittest.TestCase):
    def test_fold_into_value_is_exact_in_real_arithmetic(self):
        gen = torch.Generator().manual_seed(1)
        k, hidden, n, t = 64, 48, 32, 10
        vw, vb, ow = (torch.randn(k, hidden, generator=gen), torch.randn(k, generator=gen),
                      torch.randn(n, k, generator=gen))
        s = torch.rand(k, generator=gen) + 0.5
        h = torch.randn(t, hidden, generator=gen).double()
        p = torch.softmax(torch.randn(t, t, generator=gen), dim=-1).double()
        vw2, vb2, ow2 = quality.fold_smoothing_into_value(vw, ow, s, vb)
        before = p @ (h @ vw.double().t() + vb.double()) @ ow.double().t()
        after = p @ (h @ vw2.double().t() + vb2.double()) @ ow2.double().t()
        self.assertLess(float((before - after).abs().max()), 1e-4)
        with self.assertRaises(ValueError) as cm:
            quality.fold_smoothing_into_value(torch.ones(16, 8), ow, s)
        self.assertIn("grouped-query", str(cm.exception))


class Headroom(unittest.TestCase):
    def test_headroom_table(self):
        x = torch.tensor([[0.5, -3.0]])
        one = calibration.act_global_scale(x)
        self.assertEqual(f32_bits(float(one)), f32_bits(np.float32(2688.0) / np.float32(3.0)))
        for h in (1, 1.0, 1.25, 2.0, 10.0):
            got = calibration.act_global_scale(x, h)
            want = np.float32(np.float32(2688.0) / np.float32(3.0)) / np.float32(h)
            self.assertEqual(f32_bits(float(got)), f32_bits(want), h)
            got_np = calibration.act_global_scale(x.numpy(), h)
            self.assertEqual(f32_bits(float(got_np[0])), f32_bits(want), h)
        for bad, exc in [(0.5, ValueError), (float("inf"), ValueError), (True, TypeError),
                         ("2", TypeError)]:
            with self.assertRaises(exc):
                calibration.act_global_scale(x, bad)


if __name__ == "__main__":
    unittest.main()
