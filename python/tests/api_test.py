"""CPU tests of the Python package minimax_h3_nvfp4 (NumPy only: the emulator backend).

Runs under `./bazelw test //python:api_test` (system python3 + python3-numpy) or directly:
    PYTHONPATH=DIR python3 python/tests/api_test.py      (DIR: an installed package)
Goldens: testdata/ (testdata/README.md), found beside this file's checkout or through
$H3_TESTDATA.
"""

import ctypes
import inspect
import os
import re
import subprocess
import sys
import unittest

try:
    import numpy as np
except ImportError:
    # Run directly with a python3 that lacks NumPy (a pyenv interpreter, say): re-run under the
    # system's, which has Debian's python3-numpy (Bazel uses that one: third_party/BUILD).
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != \
            os.path.realpath("/usr/bin/python3") and not os.environ.get("H3_REEXEC"):
        os.environ["H3_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__)] + sys.argv[1:])
    raise

_HERE = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("TEST_SRCDIR"):
    # Under Bazel the package sits in runfiles/<workspace>/python/ (tests/..), beside its .so;
    # make sure it wins over the runfiles root's `minimax_h3_nvfp4` directory (the workspace has
    # the package's name). Elsewhere the installed package comes from PYTHONPATH.
    sys.path.insert(0, os.path.dirname(_HERE))

import minimax_h3_nvfp4  # noqa: E402
from minimax_h3_nvfp4 import bf16  # noqa: E402
from minimax_h3_nvfp4 import calibration  # noqa: E402
from minimax_h3_nvfp4 import diffusion_ops  # noqa: E402
from minimax_h3_nvfp4 import testing  # noqa: E402
from minimax_h3_nvfp4.diffusion_ops import (  # noqa: E402
    minimax_h3_nvfp4_out_proj, quantize_minimax_h3_o_weight_nvfp4)

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None

OP = "minimax_h3_nvfp4_out_proj"
ARGS = ("attn_out", "o_weight_q", "o_weight_sf", "o_weight_global_scale", "act_global_scale",
        "gate", "gate_index", "residual")


def testdata_dir():
    for d in (os.environ.get("H3_TESTDATA"),
              os.path.join(os.path.dirname(os.path.dirname(_HERE)), "testdata")):
        if d and os.path.exists(os.path.join(d, "op_exact_out.npy")):
            return d
    raise unittest.SkipTest("testdata/ not found (set H3_TESTDATA)")


def load_op_case(case):
    d = testdata_dir()
    names = ARGS + ("out", "act_q", "act_sf")
    return {n: np.load(os.path.join(d, "%s_%s.npy" % (case, n))) for n in names}


def inputs(c):
    return [c[n] for n in ARGS]


def random_case(m=300, n=256, k=512, g=3, seed=0, outliers=True):
    """Random data: Gaussian activations with outlier channels, a quantized Gaussian weight,
    gate indices including out-of-range ones."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k), dtype=np.float32)
    if outliers:
        x[:, rng.choice(k, 8, replace=False)] *= 40.0
    attn_out = bf16.from_float32(x)
    w = bf16.from_float32(rng.standard_normal((n, k), dtype=np.float32) * 0.05)
    q, sf, gs = quantize_minimax_h3_o_weight_nvfp4(w)
    gate = bf16.from_float32(rng.standard_normal((g, n), dtype=np.float32))
    gate_index = rng.integers(-1, g + 1, m).astype(np.int32)
    residual = bf16.from_float32(rng.standard_normal((m, n), dtype=np.float32))
    act_gs = calibration.act_global_scale(attn_out)
    return [attn_out, q, sf, gs, act_gs, gate, gate_index, residual]


class SignatureTest(unittest.TestCase):
    """FlashInfer's documented signatures are a prefix of ours; the extras are keyword-only with
    defaults."""

    def test_out_proj(self):
        params = list(inspect.signature(minimax_h3_nvfp4_out_proj).parameters.values())
        seed = [(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty)
                for n in ARGS] + [(n, inspect.Parameter.KEYWORD_ONLY, None)
                                  for n in ("out", "act_q", "act_sf")]
        got = [(p.name, p.kind, p.default) for p in params]
        self.assertEqual(got[:len(seed)], seed)
        self.assertEqual(got[len(seed):],
                         [("sm90_emulation", inspect.Parameter.KEYWORD_ONLY, "faithful"),
                          ("cpu_gemm", inspect.Parameter.KEYWORD_ONLY, "fast"),
                          ("tile", inspect.Parameter.KEYWORD_ONLY, "auto"),
                          # contract sections 12-13, after the seed's own, off by default
                          ("act_smooth", inspect.Parameter.KEYWORD_ONLY, None),
                          ("lora_down", inspect.Parameter.KEYWORD_ONLY, None),
                          ("lora_up", inspect.Parameter.KEYWORD_ONLY, None)])

    def test_operands_in_table_order(self):
        # The function passes its operands on as one tuple in the table's order
        # (core/operands.def, less the GPU's ready-flag workspace): its parameters must be that
        # order, and the generated mirror must agree with the library's struct (checked at load).
        from minimax_h3_nvfp4 import _native, _operands
        table = [o.name for o in _operands.OPERANDS if o.dtype != "FLAGS"]
        names = [n for n in inspect.signature(minimax_h3_nvfp4_out_proj).parameters
                 if n in _operands.NAMES]
        self.assertEqual(names, table)
        lib = _native.lib()
        self.assertEqual(lib.h3_args_size(), ctypes.sizeof(_native.H3OutProjArgs))
        for name, _ in _native.H3OutProjArgs._fields_:
            self.assertEqual(lib.h3_args_offset(name.encode()),
                             getattr(_native.H3OutProjArgs, name).offset, name)
        self.assertEqual(lib.h3_args_offset(b"no_such_field"), -1)

    def test_quantizer(self):
        params = list(inspect.signature(quantize_minimax_h3_o_weight_nvfp4).parameters.values())
        self.assertEqual([(p.name, p.kind, p.default) for p in params],
                         [("weight", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                           inspect.Parameter.empty)])

    def test_tile_registry(self):
        # The library's registry (kernels/device/tiles.h) through the C ABI: codes are ABI, never reused.
        from minimax_h3_nvfp4 import _native
        self.assertEqual(_native.tiles(), {"auto": 0, "128x256": 1, "128x128": 2,
                                           "128x256_lockstep": 3, "128x128_staged": 4})
        # In the registry's order, "auto" first (the default, 128x128_staged, is named, not first).
        self.assertEqual(list(_native.tiles()),
                         ["auto", "128x256_lockstep", "128x256", "128x128", "128x128_staged"])
        lib = _native.lib()
        self.assertIsNone(lib.h3_tile_name(lib.h3_tile_count()))
        self.assertEqual(lib.h3_tile_code(-1), -1)

    def test_module_path(self):
        import minimax_h3_nvfp4.diffusion_ops as ops
        self.assertIs(ops.minimax_h3_nvfp4_out_proj, minimax_h3_nvfp4.minimax_h3_nvfp4_out_proj)
        self.assertTrue(os.path.exists(minimax_h3_nvfp4.library_path()))


class GoldenOpTest(unittest.TestCase):
    """The NumPy path against testdata/'s independent goldens."""

    def check_case(self, case, gemm, exact_out):
        c = load_op_case(case)
        act_q = np.full_like(c["act_q"], 0xAB)
        act_sf = np.full_like(c["act_sf"], 0xCD)
        out = minimax_h3_nvfp4_out_proj(*inputs(c), act_q=act_q, act_sf=act_sf, cpu_gemm=gemm)
        self.assertEqual(out.dtype, np.uint16)
        self.assertEqual(out.shape, c["out"].shape)
        np.testing.assert_array_equal(act_q, c["act_q"])
        np.testing.assert_array_equal(act_sf, c["act_sf"])
        if exact_out:
            np.testing.assert_array_equal(out, c["out"])
        lo, hi, _ = testing.out_envelope(*inputs(c))
        bad, first = testing.check_out(out, lo, hi)
        self.assertEqual(bad, 0, first)

    def test_exact_data_both_gemms(self):
        # op_exact: every partial sum is exact, so out is bit-exact for any summation order.
        self.check_case("op_exact", "fast", True)
        self.check_case("op_exact", "exact", True)

    def test_entropy(self):
        # op_entropy: out.npy is the epilogue of the correctly rounded exact accumulator, which
        # the exact path computes; the fast path is held to the contract's bound.
        self.check_case("op_entropy", "exact", True)
        self.check_case("op_entropy", "fast", False)

    def test_envelope_is_a_point_on_exact_data(self):
        c = load_op_case("op_exact")
        lo, hi, exact = testing.out_envelope(*inputs(c))
        np.testing.assert_array_equal(lo, c["out"])
        np.testing.assert_array_equal(hi, c["out"])
        self.assertTrue(exact.all())
        lo2, hi2, _ = testing.out_envelope(*inputs(c), rows=[36, 0])
        np.testing.assert_array_equal(lo2, c["out"][[36, 0]])

    def test_scalars_as_python_floats(self):
        c = load_op_case("op_exact")
        args = inputs(c)
        args[3] = float(c["o_weight_global_scale"][0])
        args[4] = float(c["act_global_scale"][0])
        np.testing.assert_array_equal(minimax_h3_nvfp4_out_proj(*args), c["out"])

    def test_fp8_scale_bytes(self):
        if ml_dtypes is None:
            self.skipTest("ml_dtypes is not installed")
        c = load_op_case("op_exact")
        args = inputs(c)
        args[2] = args[2].view(ml_dtypes.float8_e4m3fn)
        np.testing.assert_array_equal(minimax_h3_nvfp4_out_proj(*args), c["out"])

    def test_ml_dtypes_bfloat16(self):
        if ml_dtypes is None:
            self.skipTest("ml_dtypes is not installed")
        c = load_op_case("op_exact")
        args = inputs(c)
        for i in (0, 5, 7):
            args[i] = args[i].view(ml_dtypes.bfloat16)
        out = minimax_h3_nvfp4_out_proj(*args)
        self.assertEqual(out.dtype, ml_dtypes.bfloat16)
        np.testing.assert_array_equal(out.view(np.uint16), c["out"])

    def test_rows_with_out_of_range_index_are_the_residual(self):
        c = load_op_case("op_exact")
        out = minimax_h3_nvfp4_out_proj(*inputs(c))
        outside = (c["gate_index"] < 0) | (c["gate_index"] >= c["gate"].shape[0])
        self.assertTrue(outside.any())
        np.testing.assert_array_equal(out[outside], c["residual"][outside])


class BuffersTest(unittest.TestCase):
    """out=, in-place residual, the act_q / act_sf workspaces, M = 0."""

    def test_out_is_filled_and_returned(self):
        c = load_op_case("op_exact")
        out = np.full_like(c["out"], 0x1234)
        got = minimax_h3_nvfp4_out_proj(*inputs(c), out=out)
        self.assertIs(got, out)
        np.testing.assert_array_equal(out, c["out"])

    def test_in_place_residual(self):
        c = load_op_case("op_entropy")
        want = minimax_h3_nvfp4_out_proj(*inputs(c), cpu_gemm="exact")
        args = inputs(c)
        residual = args[7].copy()
        args[7] = residual
        got = minimax_h3_nvfp4_out_proj(*args, out=residual, cpu_gemm="exact")
        self.assertIs(got, residual)
        np.testing.assert_array_equal(residual, want)
        np.testing.assert_array_equal(residual, c["out"])

    def test_workspaces_alone_or_together(self):
        c = load_op_case("op_entropy")
        act_q = np.zeros_like(c["act_q"])
        minimax_h3_nvfp4_out_proj(*inputs(c), act_q=act_q)
        np.testing.assert_array_equal(act_q, c["act_q"])
        act_sf = np.zeros_like(c["act_sf"])
        minimax_h3_nvfp4_out_proj(*inputs(c), act_sf=act_sf)
        np.testing.assert_array_equal(act_sf, c["act_sf"])

    def test_m_zero(self):
        c = load_op_case("op_exact")
        args = inputs(c)
        args[0] = args[0][:0]
        args[6] = args[6][:0]
        args[7] = args[7][:0]
        out = minimax_h3_nvfp4_out_proj(*args)
        self.assertEqual(out.shape, (0, 128))

    def test_random_data_fast_and_exact_paths(self):
        args = random_case()
        aq = [np.empty((300, 256), np.uint8) for _ in range(2)]
        asf = [np.empty((300, 32), np.uint8) for _ in range(2)]
        fast = minimax_h3_nvfp4_out_proj(*args, act_q=aq[0], act_sf=asf[0])
        exact = minimax_h3_nvfp4_out_proj(*args, act_q=aq[1], act_sf=asf[1], cpu_gemm="exact")
        np.testing.assert_array_equal(aq[0], aq[1])
        np.testing.assert_array_equal(asf[0], asf[1])
        lo, hi, _ = testing.out_envelope(*args)
        for out in (fast, exact):
            bad, first = testing.check_out(out, lo, hi)
            self.assertEqual(bad, 0, first)
        gi = args[6]
        outside = (gi < 0) | (gi >= 3)
        np.testing.assert_array_equal(fast[outside], args[7][outside])


class WeightQuantizerTest(unittest.TestCase):
    """quantize_minimax_h3_o_weight_nvfp4 against testdata's section-5 goldens, bit for bit."""

    def test_goldens(self):
        d = testdata_dir()
        for case in ("weight_bf16_gauss", "weight_bf16_k48", "weight_bf16_zero",
                     "weight_f32_heavy", "weight_f32_tiny"):
            with self.subTest(case=case):
                g = {x: np.load(os.path.join(d, "%s_%s.npy" % (case, x)))
                     for x in ("w", "q", "sf", "gs")}
                if g["w"].shape[1] % 64 == 0:
                    q, sf, gs = quantize_minimax_h3_o_weight_nvfp4(g["w"])
                else:
                    # The contract's quantizer takes K % 16 == 0 (section 5); the public
                    # function refuses a K the op cannot use, so its core is held to it.
                    with self.assertRaisesRegex(ValueError, r"K a positive multiple of 64"):
                        quantize_minimax_h3_o_weight_nvfp4(g["w"])
                    q, sf, gs = diffusion_ops._quantize_weight(g["w"], op_shapes=False)
                self.assertEqual((q.dtype, sf.dtype, gs.dtype),
                                 (np.dtype(np.uint8), np.dtype(np.uint8), np.dtype(np.float32)))
                np.testing.assert_array_equal(q, g["q"])
                np.testing.assert_array_equal(sf, g["sf"])
                np.testing.assert_array_equal(gs.view(np.uint32), g["gs"].view(np.uint32))

    def test_ml_dtypes_weight(self):
        if ml_dtypes is None:
            self.skipTest("ml_dtypes is not installed")
        g = np.load(os.path.join(testdata_dir(), "weight_bf16_gauss_w.npy"))
        q, _, _ = quantize_minimax_h3_o_weight_nvfp4(g.view(ml_dtypes.bfloat16))
        np.testing.assert_array_equal(
            q, np.load(os.path.join(testdata_dir(), "weight_bf16_gauss_q.npy")))


class Bf16Test(unittest.TestCase):

    def test_against_golden_conversions(self):
        d = testdata_dir()
        x = np.load(os.path.join(d, "formats_bf16_in.npy"))
        want = np.load(os.path.join(d, "formats_bf16_out.npy"))
        np.testing.assert_array_equal(bf16.from_float32(x), want)

    def test_round_trip_and_order(self):
        b = np.arange(0, 1 << 16, dtype=np.uint32).astype(np.uint16)
        finite = ~np.isnan(bf16.to_float32(b))
        np.testing.assert_array_equal(bf16.from_float32(bf16.to_float32(b))[finite], b[finite])
        keys = bf16.order_key(np.array([0xFFFF, 0xFF80, 0x8000, 0x0000, 0x7F80, 0x7FFF],
                                       np.uint16))
        self.assertTrue((np.diff(keys) > 0).all())

    def test_calibration(self):
        x = bf16.from_float32(np.array([[1.5, -3.0], [0.25, 2.0]], np.float32))
        np.testing.assert_array_equal(calibration.act_global_scale(x),
                                      np.array([np.float32(2688) / np.float32(3)], np.float32))
        np.testing.assert_array_equal(calibration.act_global_scale(np.zeros((2, 2), np.uint16)),
                                      np.array([1.0], np.float32))

    def test_calibration_refuses_bad_samples(self):
        # A sample that cannot calibrate: NaN once gave a scale of 1, inf one of 0 (refused by
        # the op only later), an int64 sample 2688; each is refused here, naming it.
        nan_bf16 = bf16.from_float32(np.array([[1.0, np.nan], [2.0, 3.0]], np.float32))
        inf_f32 = np.array([1.0, -np.inf, np.inf], np.float32)
        f = "act_global_scale: "
        rows = [  # (what, sample, exception, message regex)
            ("NaN in bf16", nan_bf16, ValueError,
             r"^%ssample must be finite in float32, got 1 non-finite of 4 values \(the first at "
             r"index \[0, 1\]\)$" % f),
            ("inf in float32", inf_f32, ValueError,
             r"^%ssample must be finite in float32, got 2 non-finite of 3 values \(the first at "
             r"index \[1\]\)$" % f),
            ("float64 beyond float32", np.array([1.0, 1e39]), ValueError,
             r"^%ssample must be finite in float32, got 1 non-finite of 2 values" % f),
            ("int64", np.arange(4, dtype=np.int64), TypeError,
             r"^%ssample must be bfloat16 \(uint16 bit patterns or ml_dtypes.bfloat16\), "
             r"float16, float32 or float64, got int64$" % f),
            ("empty", np.zeros((0, 7168), np.uint16), ValueError,
             r"^%ssample must have at least one value, got shape \[0, 7168\]$" % f),
            ("amax overflows the scale", np.full(3, 1e-38, np.float32), ValueError,
             r"^%ssample's amax must be >= 2688 / FLT_MAX \(the scale 2688 / amax must be a "
             r"finite float32\), got amax 9\.99.*e-39$" % f),
            ("a list", [1.0], TypeError,
             r"^%ssample must be a torch.Tensor or a numpy.ndarray, got list$" % f),
        ]
        for what, sample, exc, pattern in rows:
            with self.subTest(what):
                with self.assertRaisesRegex(exc, pattern):
                    calibration.act_global_scale(sample)
        # float64 is rounded to float32 first: the scale of its float32 copy.
        x = np.array([0.1, -3.3, 2.0])
        np.testing.assert_array_equal(calibration.act_global_scale(x),
                                      calibration.act_global_scale(x.astype(np.float32)))


class ErrorTest(unittest.TestCase):
    """Every bad input raises the right class, in the C++ validation's wording, before anything
    is written."""

    def setUp(self):
        self.c = load_op_case("op_exact")
        self.out = np.full_like(self.c["out"], 0x5A5A)
        self.act_q = np.full_like(self.c["act_q"], 0x11)
        self.act_sf = np.full_like(self.c["act_sf"], 0x22)

    def call(self, exc, pattern, replace=None, **kw):
        args = inputs(self.c)
        for i, v in (replace or {}).items():
            args[ARGS.index(i)] = v
        kw.setdefault("out", self.out)
        kw.setdefault("act_q", self.act_q)
        kw.setdefault("act_sf", self.act_sf)
        with self.assertRaisesRegex(exc, pattern) as cm:
            minimax_h3_nvfp4_out_proj(*args, **kw)
        # Nothing written.
        self.assertTrue((self.out == 0x5A5A).all())
        self.assertTrue((self.act_q == 0x11).all())
        self.assertTrue((self.act_sf == 0x22).all())
        return str(cm.exception)

    def test_type_errors(self):
        c = self.c
        self.call(TypeError, r"^%s: attn_out must be a torch.Tensor or a numpy.ndarray, got list$"
                  % OP, {"attn_out": c["attn_out"].tolist()})
        self.call(TypeError, r"^%s: attn_out must be of dtype bfloat16 \(uint16 bit patterns or "
                  r"ml_dtypes.bfloat16\), got float32$" % OP,
                  {"attn_out": c["attn_out"].astype(np.float32)})
        self.call(TypeError, r"^%s: gate_index must be of dtype int32, got int64$" % OP,
                  {"gate_index": c["gate_index"].astype(np.int64)})
        self.call(TypeError, r"o_weight_q must be of dtype uint8, got int8",
                  {"o_weight_q": c["o_weight_q"].view(np.int8)})
        self.call(TypeError, r"act_global_scale must be of dtype float32, got float64",
                  {"act_global_scale": c["act_global_scale"].astype(np.float64)})
        self.call(TypeError, r"o_weight_global_scale must be a float or a float32 numpy.ndarray "
                  r"of one element, got str", {"o_weight_global_scale": "1.0"})
        self.call(TypeError, r"residual must be a numpy.ndarray \(like attn_out\), got list",
                  {"residual": [1, 2]})
        self.call(TypeError, r"out must be of dtype bfloat16 .*, got float32",
                  out=np.zeros((37, 128), np.float32))
        self.call(TypeError, r"sm90_emulation must be 'faithful' or 'fast', got int",
                  sm90_emulation=1)
        self.call(TypeError, r"tile must be 'auto' or '128x256_lockstep' or '128x256' or "
                  r"'128x128' or '128x128_staged', got int", tile=2)

    def test_value_errors_shapes(self):
        c = self.c
        msg = self.call(ValueError, "residual", {"residual": c["residual"][:, :64].copy()})
        self.assertEqual(msg, "%s: residual must have shape [M, N] = [37, 128] (M = 37 from "
                         "attn_out [M, K], N = 128 from o_weight_q [N, K/2]), got [37, 64]" % OP)
        self.call(ValueError, r"^%s: gate must have shape \[G, N\] = \[9, 128\] \(N = 128 from "
                  r"o_weight_q \[N, K/2\], G = 9 from gate \[G, N\]\), got \[9, 64\]$" % OP, {"gate": c["gate"][:, :64].copy()})
        self.call(ValueError, r"gate_index must have shape \[M\] = \[37\] \(M = 37 from attn_out "
                  r"\[M, K\]\), got \[36\]",
                  {"gate_index": c["gate_index"][:36].copy()})
        self.call(ValueError, r"o_weight_sf must be round_up\(N,128\) \* round_up\(K/16,4\) = "
                  r"2048 bytes \(K = 256 from attn_out \[M, K\], N = 128 from o_weight_q "
                  r"\[N, K/2\]\), got 1024 bytes",
                  {"o_weight_sf": c["o_weight_sf"][:64].copy()})
        self.call(ValueError, r"^%s: attn_out must be 2-D \[M, K\], got shape \[9472\]$" % OP,
                  {"attn_out": c["attn_out"].reshape(-1)})
        self.call(ValueError, r"^%s: shape.k \(the columns K of attn_out \[M, K\]\) must be a "
                  r"positive multiple of 64, got 96$" % OP, {"attn_out": c["attn_out"][:, :96].copy()})
        self.call(ValueError, r"out must have shape \[M, N\] = \[37, 128\] \(.*\), got \[37, 127\]",
                  out=np.zeros((37, 127), np.uint16))
        self.call(ValueError, r"act_q must have shape \[M, K/2\] = \[37, 128\] \(M = 37, K = 256 "
                  r"from attn_out \[M, K\]\), got \[37, 64\]",
                  act_q=np.zeros((37, 64), np.uint8))
        self.call(ValueError, r"act_global_scale must be one float32 \(\[1\] or a scalar\), "
                  r"got shape \[2\]", {"act_global_scale": np.ones(2, np.float32)})

    def test_bad_input_table(self):
        """One row per bad input: the exception class, and a message that names the argument,
        says what it must be and what it was (nothing is written: self.call checks)."""
        c = self.c
        rows = [
            # (what, replaced operands, keyword arguments, exception, message regex)
            ("K = 500", {"attn_out": np.zeros((37, 500), np.uint16)}, {}, ValueError,
             r"^%s: shape.k \(the columns K of attn_out \[M, K\]\) must be a positive multiple "
             r"of 64, got 500$" % OP),
            ("G = 0", {"gate": np.zeros((0, 128), np.uint16)}, {}, ValueError,
             r"^%s: shape.g \(the rows G of gate \[G, N\]\) must be >= 1, got 0$" % OP),
            ("N = 0", {"o_weight_q": np.zeros((0, 128), np.uint8)}, {}, ValueError,
             r"^%s: shape.n \(the rows N of o_weight_q \[N, K/2\]\) must be >= 1, got 0$" % OP),
            ("o_weight_sf 5-D", {"o_weight_sf": c["o_weight_sf"].reshape(2, 4, 8, 4, 8)}, {},
             ValueError, r"^%s: o_weight_sf must have at most 4 dimensions, got shape "
             r"\[2, 4, 8, 4, 8\] \(5-D, 2048 elements\)$" % OP),
            ("residual 5-D", {"residual": c["residual"].reshape(37, 2, 2, 4, 8)}, {}, ValueError,
             r"^%s: residual must have at most 4 dimensions, got shape \[37, 2, 2, 4, 8\]" % OP),
            ("o_weight_sf wrong size, 3-D", {"o_weight_sf": c["o_weight_sf"].reshape(2, 32, 32)[:1]},
             {}, ValueError, r"o_weight_sf must be round_up\(N,128\) \* round_up\(K/16,4\) = 2048 "
             r"bytes \(K = 256 from attn_out \[M, K\], N = 128 from o_weight_q \[N, K/2\]\), got "
             r"1024 bytes \(shape \[1, 32, 32\]\)"),
            ("gate_index int64", {"gate_index": c["gate_index"].astype(np.int64)}, {}, TypeError,
             r"^%s: gate_index must be of dtype int32, got int64$" % OP),
            ("gate_index float64", {"gate_index": c["gate_index"].astype(np.float64)}, {},
             TypeError, r"^%s: gate_index must be of dtype int32, got float64$" % OP),
            ("gate as float32", {"gate": c["gate"].astype(np.float32)}, {}, TypeError,
             r"^%s: gate must be of dtype bfloat16 \(uint16 bit patterns or ml_dtypes.bfloat16\), "
             r"got float32$" % OP),
            ("act_q 3-D", {}, {"act_q": np.zeros((37, 2, 64), np.uint8)}, ValueError,
             r"^%s: act_q must have shape \[M, K/2\] = \[37, 128\] \(M = 37, K = 256 from attn_out "
             r"\[M, K\]\), got \[37, 2, 64\]$" % OP),
            # A transposed weight: K/2 looks right in the expected shape, so the message says
            # where K came from and asks.
            # A weight [N, K/2] of N = 64 given transposed ([K/2, N] = [128, 64]), with the
            # gate, residual and out of N = 64: N is read from its rows (128), and the message
            # asks.
            ("o_weight_q transposed", {"o_weight_q": np.zeros((128, 64), np.uint8),
                                       "gate": np.zeros((9, 64), np.uint16),
                                       "residual": np.zeros((37, 64), np.uint16)},
             {"out": np.zeros((37, 64), np.uint16)}, ValueError,
             r"^%s: o_weight_q must have shape \[N, K/2\] = \[128, 128\] \(K = 256 from attn_out "
             r"\[M, K\], N = 128 from o_weight_q \[N, K/2\]; is it transposed\? o_weight_q is "
             r"\[N, K/2\]\), got \[128, 64\]$" % OP),
            # The same shape with the gate's N = 128: a weight of another K, no such question.
            ("o_weight_q of K = 128", {"o_weight_q": np.zeros((128, 64), np.uint8)}, {},
             ValueError, r"^%s: o_weight_q must have shape \[N, K/2\] = \[128, 128\] \(K = 256 "
             r"from attn_out \[M, K\], N = 128 from o_weight_q \[N, K/2\]\), got \[128, 64\]$"
             % OP),
            # attn_out of another K: the message names attn_out as the source of K.
            ("attn_out K = 320", {"attn_out": np.zeros((37, 320), np.uint16)}, {}, ValueError,
             r"^%s: o_weight_q must have shape \[N, K/2\] = \[128, 160\] \(K = 320 from attn_out "
             r"\[M, K\], N = 128 from o_weight_q \[N, K/2\]\), got \[128, 128\]$" % OP),
            # A missing operand (None) is a TypeError naming it; residual=None never means
            # "in place" (two absent operands are not an alias).
            ("residual None", {"residual": None}, {}, TypeError,
             r"^%s: residual must be a numpy.ndarray \(like attn_out\), got NoneType$" % OP),
            ("residual None, out None", {"residual": None}, {"out": None}, TypeError,
             r"^%s: residual must be a numpy.ndarray \(like attn_out\), got NoneType$" % OP),
            ("o_weight_q None", {"o_weight_q": None}, {}, TypeError,
             r"^%s: o_weight_q must be a numpy.ndarray \(like attn_out\), got NoneType$" % OP),
            ("o_weight_sf None", {"o_weight_sf": None}, {}, TypeError,
             r"^%s: o_weight_sf must be a numpy.ndarray \(like attn_out\), got NoneType$" % OP),
            ("o_weight_global_scale None", {"o_weight_global_scale": None}, {}, TypeError,
             r"^%s: o_weight_global_scale must be a float or a float32 numpy.ndarray of one "
             r"element, got NoneType$" % OP),
            ("act_global_scale None", {"act_global_scale": None}, {}, TypeError,
             r"^%s: act_global_scale must be a float or a float32 numpy.ndarray of one element, "
             r"got NoneType$" % OP),
            ("gate None", {"gate": None}, {}, TypeError,
             r"^%s: gate must be a numpy.ndarray \(like attn_out\), got NoneType$" % OP),
            ("gate_index None", {"gate_index": None}, {}, TypeError,
             r"^%s: gate_index must be a numpy.ndarray \(like attn_out\), got NoneType$" % OP),
            ("gate 1-D", {"gate": c["gate"].reshape(-1)}, {}, ValueError,
             r"^%s: gate must be 2-D \[G, N\], got shape \[1152\]$" % OP),
            ("act_global_scale inf", {"act_global_scale": np.full(1, np.inf, np.float32)}, {},
             ValueError, r"^%s: act_global_scale must be a finite value > 0, got inf" % OP),
        ]
        for what, replace, kw, exc, pattern in rows:
            with self.subTest(what):
                self.call(exc, pattern, replace, **kw)

    def test_value_errors_values(self):
        c = self.c
        self.call(ValueError, r"^%s: act_global_scale must be a finite value > 0, got 0" % OP,
                  {"act_global_scale": np.zeros(1, np.float32)})
        self.call(ValueError, r"act_global_scale must be a finite value > 0, got nan",
                  {"act_global_scale": np.full(1, np.nan, np.float32)})
        self.call(ValueError, r"o_weight_global_scale must be a finite value > 0, got -1",
                  {"o_weight_global_scale": -1.0})
        self.call(ValueError, r"sm90_emulation must be 'faithful' or 'fast', got 'bogus'",
                  sm90_emulation="bogus")
        self.call(ValueError, r"cpu_gemm must be 'fast' or 'exact', got 'slow'", cpu_gemm="slow")
        self.call(ValueError, r"tile must be 'auto' or '128x256_lockstep' or '128x256' or "
                  r"'128x128' or '128x128_staged', got '256x128'", tile="256x128")

    def test_value_errors_layout(self):
        c = self.c
        wide = np.zeros((37, 512), np.uint16)
        wide[:, ::2] = c["attn_out"]
        self.call(ValueError, r"^%s: attn_out must be C-contiguous \(dense, row-major\), got "
                  r"strides \(1024, 4\)$" % OP, {"attn_out": wide[:, ::2]})
        self.call(ValueError, r"residual must be C-contiguous",
                  {"residual": np.ascontiguousarray(c["residual"].T).T})
        ro = np.zeros_like(self.out)
        ro.flags.writeable = False
        with self.assertRaisesRegex(ValueError, r"out must be a writeable array, got a read-only"):
            minimax_h3_nvfp4_out_proj(*inputs(c), out=ro)

    def test_value_errors_aliasing(self):
        c = self.c
        m, n, k = 37, 128, 256
        # out overlapping an input (not residual).
        buf = np.zeros(m * k + m * n, np.uint16)
        attn = buf[:m * k].reshape(m, k)
        attn[...] = c["attn_out"]
        msg = self.call(ValueError, "must not overlap", {"attn_out": attn},
                        out=buf[m * k - 8:m * k - 8 + m * n].reshape(m, n))
        self.assertRegex(msg, r"^%s: out must not overlap attn_out, got \[0x[0-9a-f]+, "
                         r"0x[0-9a-f]+\) and \[0x[0-9a-f]+, 0x[0-9a-f]+\)$" % OP)
        # out overlapping residual without being it.
        rbuf = np.zeros(m * n + 64, np.uint16)
        res = rbuf[:m * n].reshape(m, n)
        res[...] = c["residual"]
        saved = res.copy()
        with self.assertRaisesRegex(ValueError, r"out must not overlap residual \(only out == "
                                    r"residual exactly\)"):
            minimax_h3_nvfp4_out_proj(*inputs(c)[:7], res, out=rbuf[64:].reshape(m, n))
        np.testing.assert_array_equal(res, saved)
        # act_q overlapping act_sf, act_q overlapping an input, act_sf overlapping out.
        wbuf = np.zeros(m * k // 2 + m * k // 16, np.uint8)
        self.call(ValueError, r"act_q must not overlap act_sf",
                  act_q=wbuf[:m * k // 2].reshape(m, k // 2),
                  act_sf=wbuf[m * k // 2 - 16:m * k // 2 - 16 + m * k // 16].reshape(m, k // 16))
        self.call(ValueError, r"act_q must not overlap o_weight_q",
                  act_q=c["o_weight_q"][:37])
        obuf = np.zeros(m * n * 2, np.uint8)
        self.call(ValueError, r"out must not overlap act_sf", out=obuf.view(np.uint16).reshape(m, n),
                  act_sf=obuf[:m * k // 16].reshape(m, k // 16))

    def test_quantizer_errors(self):
        with self.assertRaisesRegex(TypeError, r"^quantize_minimax_h3_o_weight_nvfp4: weight must "
                                    r"be a bfloat16 .* or float32 array, got float16$"):
            quantize_minimax_h3_o_weight_nvfp4(np.zeros((4, 64), np.float16))
        with self.assertRaisesRegex(TypeError, r"weight must be a torch.Tensor or a "
                                    r"numpy.ndarray, got list"):
            quantize_minimax_h3_o_weight_nvfp4([[1.0]])
        with self.assertRaisesRegex(ValueError, r"^quantize_minimax_h3_o_weight_nvfp4: weight "
                                    r"must be 2-D \[N, K\], got shape \[64\]$"):
            quantize_minimax_h3_o_weight_nvfp4(np.zeros(64, np.float32))
        # A weight the op could not use is refused at quantization, naming the op's rule.
        for shape in ((4, 40), (4, 48), (4, 0), (0, 64), (4, 96)):
            with self.subTest(shape=shape), self.assertRaisesRegex(
                    ValueError, r"^quantize_minimax_h3_o_weight_nvfp4: weight must be \[N, K\] "
                    r"with N >= 1 and K a positive multiple of 64, as the op takes it \(the GPU "
                    r"kernel: also K %% 256 == 0, N %% 128 == 0\), got shape \[%d, %d\]$" % shape):
                quantize_minimax_h3_o_weight_nvfp4(np.zeros(shape, np.float32))
        w = np.zeros((4, 64), np.float32)
        w[1, 3] = np.inf
        with self.assertRaisesRegex(ValueError, r"weight\[1, 3\]: expected a finite value, "
                                    r"got inf"):
            quantize_minimax_h3_o_weight_nvfp4(w)
        with self.assertRaisesRegex(ValueError, r"weight: amax = .* makes the global scale "
                                    r"2688/amax overflow f32"):  # OutOfRange -> ValueError
            quantize_minimax_h3_o_weight_nvfp4(np.full((4, 64), 1e-38, np.float32))

    def test_gpu_quantizer_shape_errors_without_cuda(self):
        # h3_quantize_weight_gpu checks shapes and pointers before any CUDA call: these fail
        # the same way on a machine without a GPU (the pointers are never dereferenced).
        import ctypes
        from minimax_h3_nvfp4 import _native
        lib = _native.lib()

        def call(w_shape, q_shape, sf_shape, is_f32=0, w_ptr=0x100000, q_ptr=0x200000,
                 sf_ptr=0x300000):
            w, q, sf = (_native.make_array(p, sh) for p, sh in
                        ((w_ptr, w_shape), (q_ptr, q_shape), (sf_ptr, sf_shape)))
            gs = ctypes.c_float(0.0)
            code = lib.h3_quantize_weight_gpu(ctypes.byref(w), is_f32, ctypes.byref(q),
                                              ctypes.byref(sf), ctypes.byref(gs), -1, None)
            return code, lib.h3_last_error().decode()

        f = "quantize_minimax_h3_o_weight_nvfp4: "
        cases = [
            ((64,), (4, 32), (128, 4), 0, {}, f + "weight must be 2-D [N, K], got shape [64]"),
            ((4, 40), (4, 20), (128, 4), 0, {},
             f + "weight k: expected a positive multiple of 16, got 40"),
            ((0, 64), (0, 32), (0, 4), 0, {}, f + "weight n: expected >= 1, got 0"),
            ((4, 64), (4, 16), (128, 4), 0, {},
             f + "q must have shape [N, K/2] = [4, 32], got [4, 16]"),
            ((4, 64), (4, 32), (4, 4), 0, {}, f + "sf must be 512 bytes, got 16"),
            ((4, 64), (4, 32), (128, 4), 2, {},
             f + "weight_is_f32 must be 0 (bf16) or 1 (f32), got 2"),
            ((4, 64), (4, 32), (128, 4), 0, {"w_ptr": 0},
             f + "weight must be a device pointer, got null"),
            ((4, 64), (4, 32), (128, 4), 1, {"w_ptr": 0x100004},
             f + "weight must be 16-byte aligned, got address 0x100004"),
            ((4, 64), (4, 32), (128, 4), 0, {"q_ptr": 0x100100},
             f + "q must not overlap weight, got [0x100100, 0x100180) and [0x100000, 0x100200)"),
        ]
        for w_shape, q_shape, sf_shape, is_f32, ptrs, want in cases:
            with self.subTest(want):
                code, msg = call(w_shape, q_shape, sf_shape, is_f32, **ptrs)
                self.assertEqual((code, msg), (_native.INVALID_ARGUMENT, want))

    def test_stall_report_none_without_a_stall(self):
        # Nothing gave up waiting in this process (and here there may be no GPU at all).
        self.assertIsNone(minimax_h3_nvfp4.stall_report())

    def test_gpu_backend_name(self):
        # Without a driver (no /dev/nvidiactl): said plainly, not CUDA's "driver version is
        # insufficient"; with one, the build's name or why the device is not supported.
        try:
            name = minimax_h3_nvfp4.backend_name()
        except RuntimeError as e:
            if not os.path.exists("/dev/nvidiactl"):
                self.assertRegex(str(e), r"^%s: no NVIDIA driver or GPU found \(" % OP)
            else:
                self.assertRegex(str(e), r"^%s: .*(failed: cuda\w+ \(.+\)|has compute capability"
                                 r"|NVIDIA driver)" % OP)
        else:
            self.assertRegex(name, r"^sm_")


class GpuFieldTest(unittest.TestCase):
    """The C ABI's GPU-only integer fields are checked before any CUDA call (so here too, on a
    machine without a GPU): the flags 0 or 1 each, the tile a registered code; the message
    naming the field."""

    def test_flag_fields_must_be_0_or_1(self):
        from minimax_h3_nvfp4 import _native
        m, n, k = 1, 128, 256
        buf = np.zeros(1 << 16, np.uint8)
        base = (buf.ctypes.data + 255) // 256 * 256  # aligned, never dereferenced: refused first
        shapes = {"attn_out": (m, k), "o_weight_q": (n, k // 2),
                  "o_weight_sf": (int(_native.lib().h3_swizzled_scale_bytes(n, k)),),
                  "act_global_scale": (1,), "gate": (9, n), "gate_index": (m,),
                  "residual": (m, n), "out": (m, n)}
        table = [("cached_workspace", 2, "cached_workspace must be 0 or 1, got 2"),
                 ("ready_flags_zeroed", 2, "ready_flags_zeroed must be 0 or 1, got 2"),
                 ("ready_flags_zeroed", -1, "ready_flags_zeroed must be 0 or 1, got -1"),
                 ("sm90_emulation", 2, "sm90_emulation must be 0 \\(faithful\\) or 1 "
                  "\\(fast\\), got 2"),
                 ("tile", 99, "tile must be a registered tile config: 0 \\(auto\\), 3 "
                  "\\(128x256_lockstep\\), 1 \\(128x256\\), 2 \\(128x128\\), 4 "
                  "\\(128x128_staged\\), got 99")]
        for field, value, message in table:
            with self.subTest(field=field, value=value):
                a = _native.new_args()
                for i, (name, shape) in enumerate(shapes.items()):
                    setattr(a, name, _native.make_array(base + 4096 * i, shape))
                a.o_weight_global_scale_value = 1.0
                setattr(a, field, value)
                code = _native.lib().h3_out_proj_gpu(ctypes.byref(a), None)
                with self.assertRaisesRegex(ValueError, "^minimax_h3_nvfp4_out_proj: " + message):
                    _native.check(code)


class DocAndVersionTest(unittest.TestCase):

    def test_version_matches_core(self):
        # core/version.h holds the version every command-line tool prints; the package's must
        # be the same. Under Bazel the header is a data dependency; in a checkout, beside us.
        candidates = [os.path.join(os.path.dirname(os.path.dirname(_HERE)), "core", "version.h")]
        if os.environ.get("TEST_SRCDIR"):
            candidates.insert(0, os.path.join(os.environ["TEST_SRCDIR"],
                                              os.environ.get("TEST_WORKSPACE", ""),
                                              "core", "version.h"))
        path = next((p for p in candidates if os.path.exists(p)), None)
        if path is None:
            self.skipTest("core/version.h not found (an installed package outside the checkout)")
        with open(path) as f:
            m = re.search(r'^#define H3_VERSION "([^"]+)"$', f.read(), re.M)
        self.assertIsNotNone(m, "no H3_VERSION in %s" % path)
        self.assertEqual(minimax_h3_nvfp4.__version__, m.group(1))
        self.assertRegex(m.group(1), r"^0\.\d+\.\d+$")

    def test_help_lists_errors_and_bf16(self):
        for fn in (minimax_h3_nvfp4_out_proj, quantize_minimax_h3_o_weight_nvfp4,
                   minimax_h3_nvfp4.backend_name):
            with self.subTest(fn.__name__):
                self.assertIn("Raises", fn.__doc__)
                self.assertIn("RuntimeError" if fn is not quantize_minimax_h3_o_weight_nvfp4
                              else "ValueError", fn.__doc__)
        doc = minimax_h3_nvfp4_out_proj.__doc__
        self.assertIn("uint16", doc)
        self.assertIn("residual's dtype", doc)
        self.assertNotIn("attn_out's dtype", doc)

    def test_out_dtype_follows_residual(self):
        if ml_dtypes is None:
            self.skipTest("ml_dtypes is not installed")
        c = load_op_case("op_exact")
        args = inputs(c)
        args[7] = args[7].view(ml_dtypes.bfloat16)  # attn_out stays uint16
        out = minimax_h3_nvfp4_out_proj(*args)
        self.assertEqual(out.dtype, ml_dtypes.bfloat16)
        np.testing.assert_array_equal(out.view(np.uint16), c["out"])


class NoTorchTest(unittest.TestCase):

    def test_module_needs_torch(self):
        # In a child process where torch cannot be imported, whether or not it is installed.
        code = ("import sys; sys.modules['torch'] = None\n"
                "import minimax_h3_nvfp4\n"
                "try:\n"
                "    minimax_h3_nvfp4.MiniMaxH3NVFP4OutProj\n"
                "except ImportError as e:\n"
                "    print('ImportError', e)\n")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                               [os.path.dirname(os.path.dirname(minimax_h3_nvfp4.__file__))]
                               + sys.path)), timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^ImportError .*torch")


if __name__ == "__main__":
    unittest.main(verbosity=2)
