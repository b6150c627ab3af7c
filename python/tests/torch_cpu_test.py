"""The torch CPU path: CPU tensors run the emulator through the same wrapper and op the GPU uses
(torch.library custom_op on torch >= 2.4, the plain implementation below it - Debian's torch
1.13 here), and the modules. Needs torch: ./bazelw installs Debian's python3-torch.
"""

import sys
import unittest
from unittest import mock

import numpy as np

try:
    import torch
except ImportError:
    torch = None

if torch is None:
    sys.exit("torch_cpu_test: torch must be importable by %s (Debian: apt-get install "
             "python3-torch; ./bazelw installs it), got ImportError" % sys.executable)

import minimax_h3_nvfp4  # noqa: E402
from minimax_h3_nvfp4 import _torch_op, selftest  # noqa: E402
from minimax_h3_nvfp4.diffusion_ops import (  # noqa: E402
    minimax_h3_nvfp4_out_proj, quantize_minimax_h3_o_weight_nvfp4)

ARGS = selftest.ARGS


def t(a):
    """A CPU torch tensor of a NumPy array; uint16 arrays are bf16 bit patterns."""
    if a.dtype == np.uint16:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


def bits(x):
    return x.contiguous().view(torch.int16).numpy().view(np.uint16)


class FunctionalTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.c = selftest.load_cases()["op_exact"]

    def test_golden_bit_exact(self):
        c = self.c
        act_q = torch.full(c["act_q"].shape, 0xAB, dtype=torch.uint8)
        act_sf = torch.full(c["act_sf"].shape, 0xCD, dtype=torch.uint8)
        out = minimax_h3_nvfp4_out_proj(*[t(c[a]) for a in ARGS], act_q=act_q, act_sf=act_sf)
        self.assertEqual(out.dtype, torch.bfloat16)
        self.assertEqual(out.device.type, "cpu")
        np.testing.assert_array_equal(bits(out), c["out"])
        np.testing.assert_array_equal(act_q.numpy(), c["act_q"])
        np.testing.assert_array_equal(act_sf.numpy(), c["act_sf"])

    def test_in_place_and_out(self):
        c = self.c
        args = [t(c[a]) for a in ARGS]
        res = args[7]
        got = minimax_h3_nvfp4_out_proj(*args, out=res)
        self.assertIs(got, res)
        np.testing.assert_array_equal(bits(res), c["out"])
        args = [t(c[a]) for a in ARGS]
        out = torch.empty_like(args[7])
        self.assertIs(minimax_h3_nvfp4_out_proj(*args, out=out), out)
        np.testing.assert_array_equal(bits(out), c["out"])

    def test_errors_name_the_argument(self):
        args = [t(self.c[a]) for a in ARGS]
        args[6] = args[6].to(torch.int64)
        with self.assertRaisesRegex(TypeError, r"^minimax_h3_nvfp4_out_proj: gate_index must be "
                                    r"of dtype torch\.int32, got torch\.int64$"):
            minimax_h3_nvfp4_out_proj(*args)

    def test_op_registration_matches_the_torch_version(self):
        major, minor = (int(v) for v in torch.__version__.split(".")[:2])
        has_custom_op = hasattr(torch.library, "custom_op")
        self.assertEqual(has_custom_op, (major, minor) >= (2, 4))
        self.assertEqual(_torch_op.registered, has_custom_op)
        if not has_custom_op:
            self.assertIs(_torch_op.out_proj, _torch_op._impl)
        print("torch %s: custom op registered: %s" % (torch.__version__, _torch_op.registered))

    def test_fallback_without_custom_op(self):
        # What torch < 2.4 gets, on any torch: the plain implementation, which computes the
        # same bits.
        with mock.patch.object(torch.library, "custom_op", None, create=True):
            fn = _torch_op._register()
        self.assertIs(fn, _torch_op._impl)
        c = self.c
        args = [t(c[a]) for a in ARGS]
        out = torch.empty_like(args[7])
        w_gs = args[3]
        fn(args[0], args[1], args[2], w_gs, 0.0, args[4], args[5], args[6], args[7], out, None,
           None, 0, 0, 0)
        np.testing.assert_array_equal(bits(out), c["out"])


class ModuleTest(unittest.TestCase):

    def setUp(self):
        g = torch.Generator().manual_seed(1)
        self.n, self.k = 128, 256
        self.w = (torch.randn(self.n, self.k, generator=g) / 16).to(torch.bfloat16)
        self.x = torch.randn(2, 3, self.k, generator=g).to(torch.bfloat16)
        self.res = torch.randn(2, 3, self.n, generator=g).to(torch.bfloat16)
        self.gate = torch.randn(4, self.n, generator=g).to(torch.bfloat16)
        self.idx = torch.tensor([[0, 1, 2], [3, 9, -1]])  # int64; 9 and -1 outside [0, G)

    def test_generic_module_equals_the_functional_op(self):
        mod = minimax_h3_nvfp4.NVFP4GatedResidualLinear(self.w, calibration_sample=self.x)
        y = mod(self.x, self.res, self.gate, self.idx)
        self.assertEqual(tuple(y.shape), (2, 3, self.n))
        q, sf, gs = quantize_minimax_h3_o_weight_nvfp4(self.w)
        want = minimax_h3_nvfp4_out_proj(
            self.x.reshape(-1, self.k), q, sf, gs, mod.act_global_scale, self.gate,
            self.idx.reshape(-1).to(torch.int32), self.res.reshape(-1, self.n))
        self.assertTrue(torch.equal(bits_t(y.reshape(-1, self.n)), bits_t(want)))
        # Rows whose gate index is outside [0, G) are the residual.
        self.assertTrue(torch.equal(bits_t(y[1, 1:]), bits_t(self.res[1, 1:])))
        # The NumPy path (the same emulator) gives the same bits.
        np_out = minimax_h3_nvfp4_out_proj(
            bits(self.x.reshape(-1, self.k)), q.numpy(), sf.numpy(), gs.numpy(),
            mod.act_global_scale.numpy(), bits(self.gate),
            self.idx.reshape(-1).to(torch.int32).numpy(), bits(self.res.reshape(-1, self.n)))
        np.testing.assert_array_equal(np_out, bits(y.reshape(-1, self.n)))

    def test_in_place_state_dict_and_seed_module(self):
        lin = torch.nn.Linear(self.k, self.n, bias=False, dtype=torch.bfloat16)
        with torch.no_grad():
            lin.weight.copy_(self.w)
        a = minimax_h3_nvfp4.MiniMaxH3NVFP4OutProj.from_linear(lin, act_global_scale=2.0)
        self.assertIsInstance(a, minimax_h3_nvfp4.NVFP4GatedResidualLinear)
        b = minimax_h3_nvfp4.NVFP4GatedResidualLinear(torch.zeros(self.n, self.k),
                                                      act_global_scale=1.0)
        b.load_state_dict(a.state_dict())
        want = a(self.x, self.res, self.gate, self.idx)
        res = self.res.clone()
        got = b(self.x, res, self.gate, self.idx, out=res)
        self.assertIs(got, res)
        self.assertTrue(torch.equal(bits_t(got), bits_t(want)))
        self.assertIn("in_features=256, out_features=128", repr(a))

    def test_module_errors(self):
        lin = torch.nn.Linear(self.k, self.n, bias=True)
        with self.assertRaisesRegex(ValueError, r"^NVFP4GatedResidualLinear: the linear layer "
                                    r"must have no bias .*got a bias of shape \(128,\)"):
            minimax_h3_nvfp4.NVFP4GatedResidualLinear.from_linear(lin, act_global_scale=1.0)
        with self.assertRaisesRegex(TypeError, r"^MiniMaxH3NVFP4OutProj: weight must be a "
                                    r"torch\.Tensor \[N, K\], got ndarray"):
            minimax_h3_nvfp4.MiniMaxH3NVFP4OutProj(np.zeros((128, 256), np.float32), 1.0)
        with self.assertRaisesRegex(ValueError, r"act_global_scale must be a float or a float32 "
                                    r"tensor \[1\] .*got str"):
            minimax_h3_nvfp4.NVFP4GatedResidualLinear(self.w, "1.0")


def bits_t(x):
    return x.contiguous().view(torch.int16)


if __name__ == "__main__":
    unittest.main(verbosity=2)
