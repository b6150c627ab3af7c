"""The modules' quality options (issue 30 item 4; docs/contract.md sections 12-13): from_linear /
the constructor with smooth_alpha and lowrank, the buffers act_smooth, lora_down, lora_up. Off,
the module is the plain one to the bit; on, its buffers are quality.py's functions of the
weight and sample, its forward is the functional op with those buffers byte for byte, its
state dict carries them; bad options are refused before any work, naming argument, expected
and given. Tables where the cases are data. Needs torch."""

import io
import sys
import unittest
from unittest import mock

try:
    import torch
except ImportError:
    sys.exit("module_options_test: torch must be importable by %s, got ImportError"
             % sys.executable)

from minimax_h3_nvfp4 import calibration, modules, quality  # noqa: E402
from minimax_h3_nvfp4 import MiniMaxH3NVFP4OutProj, NVFP4GatedResidualLinear  # noqa: E402
from minimax_h3_nvfp4.diffusion_ops import (  # noqa: E402
    minimax_h3_nvfp4_out_proj, quantize_minimax_h3_o_weight_nvfp4)

N, K = 128, 256
PLAIN = ["o_weight_q", "o_weight_sf", "o_weight_global_scale", "act_global_scale"]
OPTIONS = ["act_smooth", "lora_down", "lora_up"]
_INT = {torch.bfloat16: torch.int16, torch.float32: torch.int32, torch.uint8: torch.uint8}

# (smooth_alpha, lowrank): each option alone, both, the ends of alpha's range, every rank.
CASES = [(0.5, 0), (None, 16), (0.5, 32), (0.0, 64), (1.0, 48), (0.25, 16)]


def bits(t):
    return t.view(_INT[t.dtype])


def data(seed=3):
    """A weight, a calibration batch and a measured batch with the outlier family's channel
    scales (log-normal, a few channels x40: smoothing has something to do), operands."""
    g = torch.Generator().manual_seed(seed)
    w = (torch.randn(N, K, generator=g) / 16).to(torch.bfloat16)
    scale = torch.exp(torch.randn(K, generator=g) * 0.5)
    scale[torch.randperm(K, generator=g)[:3]] *= 40
    calib = (torch.randn(64, K, generator=g) * scale).to(torch.bfloat16)
    x = (torch.randn(2, 3, K, generator=g) * scale).to(torch.bfloat16)
    res = torch.randn(2, 3, N, generator=g).to(torch.bfloat16)
    gate = torch.randn(4, N, generator=g).to(torch.bfloat16)
    idx = torch.tensor([[0, 1, 2], [3, 9, -1]])  # 9 and -1 outside [0, G): the residual
    return w, calib, x, res, gate, idx


def linear(w):
    lin = torch.nn.Linear(w.shape[1], w.shape[0], bias=False, dtype=w.dtype)
    with torch.no_grad():
        lin.weight.copy_(w)
    return lin


def expected(w, calib, alpha, rank):
    """The buffers from quality.py's functions, the quantizer and calibration: what the module
    must hold (None for an option that is off)."""
    s = None if alpha is None else quality.smoothing_factors(calib, w, alpha)
    ws = w if s is None else quality.smooth_weight(w, s)
    down = up = None
    if rank:
        down, up, ws = quality.lowrank_split(ws, rank)
    q, sf, gs = quantize_minimax_h3_o_weight_nvfp4(ws)
    act = calibration.act_global_scale(calib if s is None else
                                       quality.smooth_activations(calib, s))
    return dict(zip(PLAIN + OPTIONS, (q, sf, gs, act, s, down, up)))


class Base(unittest.TestCase):

    def assertSame(self, got, want, what):
        if want is None:
            self.assertIsNone(got, what)
            return
        self.assertEqual((got.dtype, tuple(got.shape)), (want.dtype, tuple(want.shape)), what)
        self.assertTrue(torch.equal(bits(got), bits(want)), what)

    def assertBuffers(self, mod, want, what):
        for name in PLAIN + OPTIONS:
            self.assertSame(getattr(mod, name), want[name], "%s: %s" % (what, name))


class OffTest(Base):
    """Options off (the defaults, or given as off): today's module - the plain buffers, no
    option in the state dict, the op called with None for each, the same bits."""

    def test_off_is_the_plain_module(self):
        w, calib, x, res, gate, idx = data()
        want = expected(w, calib, None, 0)
        table = [
            ("defaults", lambda: NVFP4GatedResidualLinear(w, calibration_sample=calib)),
            ("given off", lambda: NVFP4GatedResidualLinear(w, calibration_sample=calib,
                                                           smooth_alpha=None, lowrank=0)),
            ("from_linear off", lambda: NVFP4GatedResidualLinear.from_linear(
                linear(w), calibration_sample=calib, smooth_alpha=None, lowrank=0)),
            ("seed module", lambda: MiniMaxH3NVFP4OutProj.from_linear(
                linear(w), calibration_sample=calib)),
        ]
        x2, res2, idx2 = x.reshape(-1, K), res.reshape(-1, N), idx.reshape(-1).to(torch.int32)
        plain_out = minimax_h3_nvfp4_out_proj(x2, *(want[n] for n in PLAIN), gate, idx2, res2)
        for what, make in table:
            with self.subTest(what):
                mod = make()
                self.assertBuffers(mod, want, what)
                self.assertEqual(list(mod.state_dict()), PLAIN)
                self.assertEqual(sorted(dict(mod.named_buffers())), sorted(PLAIN))
                self.assertNotIn("act_smooth", repr(mod))
                self.assertNotIn("lowrank", repr(mod))
                for xi, ri in ((x, res), (x2, res2)):
                    got = mod(xi, ri, gate, idx if xi.dim() == 3 else idx2)
                    self.assertSame(got.reshape(-1, N), plain_out, what)
                with mock.patch.object(modules, "minimax_h3_nvfp4_out_proj",
                                       wraps=modules.minimax_h3_nvfp4_out_proj) as op:
                    mod(x2, res2, gate, idx2)
                kw = op.call_args[1]
                self.assertEqual([kw[n] for n in OPTIONS], [None, None, None])


class OnTest(Base):

    def test_buffers_are_quality_functions(self):
        # act_smooth = smoothing_factors, the rank split of the smoothed weight, the residual
        # quantized, act_global_scale calibrated on x' (contract section 12); calibrate(...,
        # headroom) smooths its sample too.
        w, calib, x, _, _, _ = data()
        for alpha, rank in CASES:
            with self.subTest(smooth_alpha=alpha, lowrank=rank):
                mod = NVFP4GatedResidualLinear.from_linear(
                    linear(w), calibration_sample=calib, smooth_alpha=alpha, lowrank=rank)
                want = expected(w, calib, alpha, rank)
                self.assertBuffers(mod, want, (alpha, rank))
                s = want["act_smooth"]
                sx = x if s is None else quality.smooth_activations(x, s)
                for h in (1.0, 1.5, 4):
                    mod.calibrate(x, headroom=h)
                    self.assertSame(mod.act_global_scale,
                                    calibration.act_global_scale(sx, h), (alpha, rank, h))
                text = repr(mod)
                self.assertEqual("act_smooth" in text, alpha is not None, text)
                self.assertEqual("lowrank=%d" % rank in text, rank != 0, text)

    def test_forward_is_the_op_with_the_buffers(self):
        # Byte for byte the functional op given the module's buffers, on the 2-D route and the
        # leading-dimension one, new out and in place; the op receives the very buffers; and
        # the options change the result (they are not dropped on the way).
        w, calib, x, res, gate, idx = data(seed=5)
        x2, res2, idx2 = x.reshape(-1, K), res.reshape(-1, N), idx.reshape(-1).to(torch.int32)
        for alpha, rank in CASES:
            with self.subTest(smooth_alpha=alpha, lowrank=rank):
                mod = MiniMaxH3NVFP4OutProj.from_linear(
                    linear(w), calibration_sample=calib, smooth_alpha=alpha, lowrank=rank)
                ops = [getattr(mod, n) for n in PLAIN]
                opts = {n: getattr(mod, n) for n in OPTIONS}
                want = minimax_h3_nvfp4_out_proj(x2, *ops, gate, idx2, res2, **opts)
                self.assertSame(mod(x, res, gate, idx).reshape(-1, N), want, "N-D")
                self.assertSame(mod(x2, res2, gate, idx2), want, "2-D")
                in_place = res.clone()
                self.assertIs(mod(x, in_place, gate, idx, out=in_place), in_place)
                self.assertSame(in_place.reshape(-1, N), want, "in place")
                without = minimax_h3_nvfp4_out_proj(x2, *ops, gate, idx2, res2)
                self.assertFalse(torch.equal(bits(want), bits(without)))
                with mock.patch.object(modules, "minimax_h3_nvfp4_out_proj",
                                       wraps=modules.minimax_h3_nvfp4_out_proj) as op:
                    mod(x, res, gate, idx)
                kw = op.call_args[1]
                for n in OPTIONS:
                    self.assertIs(kw[n], opts[n], n)


class StateDictTest(Base):

    def test_round_trips(self):
        # A state dict (through torch.save / torch.load too) defines the layer's options: a
        # plain module loads one with options, a module of another rank loads it, and a module
        # with options loads a plain one (its options become None); outputs follow, bit for bit.
        w, calib, x, res, gate, idx = data(seed=7)
        smooth32 = NVFP4GatedResidualLinear.from_linear(
            linear(w), calibration_sample=calib, smooth_alpha=0.5, lowrank=32)
        plain = NVFP4GatedResidualLinear(w, calibration_sample=calib)
        lowrank16 = NVFP4GatedResidualLinear(w * 2, calibration_sample=calib, lowrank=16)
        sd = smooth32.state_dict()
        self.assertEqual(list(sd), PLAIN + OPTIONS)
        buf = io.BytesIO()
        torch.save(sd, buf)
        buf.seek(0)
        saved = torch.load(buf)

        def fresh_plain():
            return NVFP4GatedResidualLinear(torch.zeros(N, K), act_global_scale=1.0)

        def fresh_rank16():
            return NVFP4GatedResidualLinear(w, calibration_sample=calib, lowrank=16)

        table = [  # (into, from, the module whose buffers and output the result must have)
            ("plain <- smooth+lowrank32", fresh_plain, sd, smooth32),
            ("plain <- saved smooth+lowrank32", fresh_plain, saved, smooth32),
            ("lowrank16 <- smooth+lowrank32", fresh_rank16, sd, smooth32),
            ("smooth+lowrank32 <- plain", lambda: NVFP4GatedResidualLinear(
                w * 3, calibration_sample=calib, smooth_alpha=0.5, lowrank=32),
             plain.state_dict(), plain),
            ("smooth+lowrank32 <- lowrank16", lambda: NVFP4GatedResidualLinear(
                w, calibration_sample=calib, smooth_alpha=0.25, lowrank=32),
             lowrank16.state_dict(), lowrank16),
        ]
        for what, make, state, like in table:
            with self.subTest(what):
                mod = make()
                mod.load_state_dict(state)
                self.assertBuffers(mod, {n: getattr(like, n) for n in PLAIN + OPTIONS}, what)
                self.assertEqual(list(mod.state_dict()), list(like.state_dict()))
                self.assertSame(mod(x, res, gate, idx), like(x, res, gate, idx), what)
        # Strict loading still names a key of no buffer, and a missing plain buffer.
        mod = fresh_plain()
        with self.assertRaisesRegex(RuntimeError, r'Unexpected key\(s\) in state_dict: "bogus"'):
            mod.load_state_dict(dict(sd, bogus=torch.zeros(1)))
        partial = dict(sd)
        del partial["o_weight_sf"]
        with self.assertRaisesRegex(RuntimeError, r'Missing key\(s\) in state_dict: '
                                    r'"o_weight_sf"'):
            fresh_plain().load_state_dict(partial)

    def test_options_follow_to_and_submodules(self):
        # As buffers, the options move with .to() and appear under a parent's prefix.
        w, calib, x, res, gate, idx = data(seed=9)
        parent = torch.nn.Module()
        parent.proj = NVFP4GatedResidualLinear(w, calibration_sample=calib, smooth_alpha=0.5,
                                               lowrank=16)
        self.assertEqual([k for k in parent.state_dict() if k.split(".")[1] in OPTIONS],
                         ["proj.act_smooth", "proj.lora_down", "proj.lora_up"])
        other = torch.nn.Module()
        other.proj = NVFP4GatedResidualLinear(w, act_global_scale=1.0)
        other.load_state_dict(parent.state_dict())
        self.assertSame(other.proj(x, res, gate, idx), parent.proj(x, res, gate, idx), "child")
        parent.to("cpu")
        self.assertEqual(parent.proj.lora_up.device.type, "cpu")


class ErrorTest(Base):
    """A bad option is refused before any quantization, naming the argument, the expected and
    the given, by both classes and both entry points."""

    def test_table(self):
        w, calib, _, _, _, _ = data()
        table = [  # (kwargs, exception, message after "<class>: ")
            ({"lowrank": 8}, ValueError, r"lowrank must be 0 \(off\) or a multiple of 16 in "
             r"16\.\.64 \(contract section 13\), got 8$"),
            ({"lowrank": 24}, ValueError, r"lowrank must be 0 \(off\) .*, got 24$"),
            ({"lowrank": 80}, ValueError, r"lowrank must be 0 \(off\) .*, got 80$"),
            ({"lowrank": -16}, ValueError, r"lowrank must be 0 \(off\) .*, got -16$"),
            ({"lowrank": 32.0}, TypeError, r"lowrank must be an int, 0 \(off\) or a multiple "
             r"of 16 in 16\.\.64, got float$"),
            ({"lowrank": True}, TypeError, r"lowrank must be an int, .*, got bool$"),
            ({"lowrank": None}, TypeError, r"lowrank must be an int, .*, got NoneType$"),
            ({"smooth_alpha": 1.5}, ValueError, r"smooth_alpha must be None \(off\) or a float "
             r"in \[0, 1\], got 1\.5$"),
            ({"smooth_alpha": -0.25}, ValueError, r"smooth_alpha must be .*, got -0\.25$"),
            ({"smooth_alpha": float("nan")}, ValueError, r"smooth_alpha must be .*, got nan$"),
            ({"smooth_alpha": "0.5"}, TypeError, r"smooth_alpha must be None \(off\) or a float "
             r"in \[0, 1\], got str$"),
            ({"smooth_alpha": True}, TypeError, r"smooth_alpha must be .*, got bool$"),
            ({"smooth_alpha": 0.5, "calibration_sample": None}, ValueError,
             r"smooth_alpha needs calibration_sample \(.*\), got calibration_sample=None$"),
            ({"smooth_alpha": 0.5, "calibration_sample": None, "act_global_scale": 1.0},
             ValueError, r"smooth_alpha needs calibration_sample .*=None$"),
        ]
        for cls in (NVFP4GatedResidualLinear, MiniMaxH3NVFP4OutProj):
            for kwargs, exc, message in table:
                for entry in ("constructor", "from_linear"):
                    with self.subTest(cls=cls.__name__, entry=entry, **{
                            k: repr(v) for k, v in kwargs.items()}):
                        kw = dict({"calibration_sample": calib}, **kwargs)
                        with mock.patch.object(modules, "quantize_minimax_h3_o_weight_nvfp4",
                                               side_effect=AssertionError("quantized")), \
                                self.assertRaisesRegex(exc, r"^%s: %s" % (cls.__name__,
                                                                          message)):
                            if entry == "constructor":
                                cls(w, **kw)
                            else:
                                cls.from_linear(linear(w), **kw)

    def test_rank_above_the_weights(self):
        with self.assertRaisesRegex(ValueError, r"^NVFP4GatedResidualLinear: lowrank must be at "
                                    r"most min\(N, K\) = 32 \(the weight \[32, 256\] has no "
                                    r"more singular directions\), got 48$"):
            NVFP4GatedResidualLinear(torch.ones(32, K), act_global_scale=1.0, lowrank=48)

    def test_calibrate_names_a_sample_of_another_width(self):
        w, calib, _, _, _, _ = data()
        mod = NVFP4GatedResidualLinear(w, calibration_sample=calib, smooth_alpha=0.5)
        before = mod.act_global_scale.clone()
        with self.assertRaisesRegex(ValueError, r"^NVFP4GatedResidualLinear: sample must have "
                                    r"shape \[\.\.\., in_features\] = \[\.\.\., 256\], got "
                                    r"\[4, 128\]$"):
            mod.calibrate(torch.ones(4, 128, dtype=torch.bfloat16))
        self.assertSame(mod.act_global_scale, before, "unchanged")


if __name__ == "__main__":
    unittest.main()
