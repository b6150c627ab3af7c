"""Tests of the SVDQuant checkpoint adapters (minimax_h3_nvfp4/checkpoint_svd.py): ModelOpt
NVFP4_SVD ("modelopt-svd") and Nunchaku SVDQuant NVFP4 ("nunchaku"), against the fixtures of
testdata/checkpoints/ (python/tests/make_checkpoint_fixtures.py wrote them from synthetic bf16
layers by each format's recipe, Nunchaku's packing included): detection, conversion bit for bit,
the op's output through every route (with act_smooth, lora_down, lora_up on the CPU emulator),
the stated bound against each format's own arithmetic, what wrong layouts do to the output, a
table of bad files, the modules' from_checkpoint / load_state_dict, and the command line.

    ./bazelw test //python:checkpoints_svd_test
    PYTHONPATH=<installed package> /usr/bin/python3 python/tests/checkpoints_svd_test.py
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("TEST_SRCDIR"):
    # Under Bazel the package sits in runfiles/<workspace>/python/ (api_test.py says why).
    sys.path.insert(0, os.path.dirname(_HERE))

from minimax_h3_nvfp4 import bf16  # noqa: E402
from minimax_h3_nvfp4 import calibration  # noqa: E402
from minimax_h3_nvfp4 import checkpoint_formats as cf  # noqa: E402
from minimax_h3_nvfp4 import checkpoint_nunchaku as cn  # noqa: E402
from minimax_h3_nvfp4 import checkpoint_svd as cs  # noqa: E402
from minimax_h3_nvfp4 import checkpoints  # noqa: E402
from minimax_h3_nvfp4 import safetensors_io as st  # noqa: E402
from minimax_h3_nvfp4.checkpoints import CheckpointError  # noqa: E402
from minimax_h3_nvfp4.diffusion_ops import minimax_h3_nvfp4_out_proj  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "testdata", "checkpoints")
ATTN, FF = "transformer_blocks.0.attn.to_out.0", "transformer_blocks.0.ff.net.2"
# (format, layer, its bf16 layer in reference.safetensors, input scale?, act_smooth?, rank)
LAYERS = [
    ("modelopt-svd", ATTN, "w_attn", True, True, 32),
    ("modelopt-svd", FF, "w_ff", True, False, 0),
    ("nunchaku", ATTN, "w_attn", False, True, 32),
    ("nunchaku", FF, "w_ff", False, False, 16),
]
U24, U8 = 2.0 ** -24, 2.0 ** -8


def _fixture_script():
    path = os.path.join(_HERE, "make_checkpoint_fixtures.py")
    spec = importlib.util.spec_from_file_location("make_checkpoint_fixtures", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FX = _fixture_script()


def fixture(*parts):
    return os.path.join(FIXTURES, *parts)


def reference():
    got, _ = st.load(fixture("reference.safetensors"))
    return {k: np.array(t.array) for k, t in got.items()}


def _tensors(path):
    got, meta = st.load(path)
    return {k: (t.dtype, np.array(t.array)) for k, t in got.items()}, meta


def smoothed(x, act_smooth):
    """x' of contract section 12 in NumPy: bf16(f32(x) * s)."""
    return x if act_smooth is None else bf16.from_float32(bf16.to_float32(x) * act_smooth)


def act_scale(c, x):
    """The layer's act_global_scale, or one calibrated on x' (contract 12)."""
    if c.act_global_scale is not None:
        return c.act_global_scale
    return np.asarray(calibration.act_global_scale(smoothed(x, c.act_smooth)),
                      np.float32).reshape(1)


def run_op(x, c, a_gs, **override):
    """out = 0 + bf16(1 * (op's o)) on the emulator, exact GEMM: bf16 bits [M, N]."""
    ops = {k: getattr(c, k) for k in ("o_weight_q", "o_weight_sf", "o_weight_global_scale",
                                      "act_smooth", "lora_down", "lora_up")}
    ops.update(override)
    n, m = ops["o_weight_q"].shape[0], x.shape[0]
    return minimax_h3_nvfp4_out_proj(
        x, ops["o_weight_q"], ops["o_weight_sf"], ops["o_weight_global_scale"], a_gs,
        bf16.from_float32(np.ones((1, n), np.float32)), np.zeros(m, np.int32),
        np.zeros((m, n), np.uint16), cpu_gemm="exact", act_smooth=ops["act_smooth"],
        lora_down=ops["lora_down"], lora_up=ops["lora_up"])


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def src_copy(self, fmt, mutate=None, configs=None, metadata=None):
        """A copy of fixture folder `fmt`, its tensors changed by `mutate`, configs replaced."""
        src = os.path.join(self.dir, "src")
        shutil.rmtree(src, ignore_errors=True)
        shutil.copytree(fixture(fmt), src)
        path = os.path.join(src, "model.safetensors")
        tensors, meta = _tensors(path)
        if mutate:
            mutate(tensors)
        st.save(path, tensors, meta if metadata is None else (metadata or None))
        for name, doc in (configs or {}).items():
            p = os.path.join(src, name)
            if doc is None:
                os.unlink(p)
            else:
                with open(p, "w") as f:
                    json.dump(doc, f)
        return src


class Detect(Base):
    def test_formats(self):
        rows = [("modelopt-svd", "modelopt-svd", 'config.json: quantization_config.quant_method '
                 '= "modelopt", quant_algo = "NVFP4_SVD"'),
                ("nunchaku", "nunchaku", 'safetensors metadata quantization_config: method '
                 '"svdquant", weight dtype "fp4_e2m1_all", group_size 16 (Nunchaku)'),
                ("expected/nunchaku.safetensors", "minimax_h3_nvfp4", "metadata format"),
                ("expected/modelopt-svd.safetensors", "minimax_h3_nvfp4", "metadata format")]
        for folder, fmt, reason in rows:
            with self.subTest(folder=folder):
                got, why = checkpoints.detect(fixture(folder))
                self.assertEqual(got, fmt)
                self.assertTrue(any(reason in w for w in why), why)

    def test_other_evidence(self):
        # hf_quant_config.json's NVFP4_SVD, MIXED_PRECISION with NVFP4_SVD and NVFP4 layers, and
        # the tensor names alone all say modelopt-svd; format= checks against the evidence.
        cfg = {"config.json": None}
        rows = [
            ({"hf_quant_config.json": {"quantization": {"quant_algo": "NVFP4_SVD",
                                                        "group_size": 16}}},
             'hf_quant_config.json: quantization.quant_algo = "NVFP4_SVD" (group_size 16)'),
            ({"hf_quant_config.json": {"quantization": {
                "quant_algo": "MIXED_PRECISION", "quantized_layers": {
                    ATTN: {"quant_algo": "NVFP4_SVD"}, FF: {"quant_algo": "NVFP4"}}}}},
             'quant_algo = "MIXED_PRECISION" (its layers: NVFP4_SVD)'),
            ({}, "tensor names: 1 <layer>.svdquant_lora_a (ModelOpt NVFP4_SVD's low-rank "
                 "branch)"),
        ]
        for extra, reason in rows:
            with self.subTest(reason=reason):
                src = self.src_copy("modelopt-svd", configs=dict(cfg, **extra))
                fmt, why = checkpoints.detect(src)
                self.assertEqual(fmt, "modelopt-svd")
                self.assertIn(reason, why[0])
        with self.assertRaisesRegex(CheckpointError, "format 'modelopt' given, but the checkpoint "
                                    "says modelopt-svd"):
            checkpoints.detect(fixture("modelopt-svd"), "modelopt")
        with self.assertRaisesRegex(CheckpointError, r"carries '.*\.pre_quant_scale' .* a "
                                    r"ModelOpt NVFP4_SVD checkpoint is format 'modelopt-svd'"):
            checkpoints.convert_layer(fixture("modelopt-svd"), ATTN, "modelopt")

    def test_nunchaku_names_alone_need_format(self):
        # Without Nunchaku's metadata the names do not say the layout: format= must.
        src = self.src_copy("nunchaku", metadata={})
        with self.assertRaisesRegex(CheckpointError, r"Nunchaku's tensor names \(tensor names: 2 "
                                    r"<layer>\.qweight with \.wscales F8_E4M3 .*\) without the "
                                    r"safetensors metadata quantization_config .* pass "
                                    r"format='nunchaku'"):
            checkpoints.detect(src)
        self.assertEqual(checkpoints.detect(src, "nunchaku")[0], "nunchaku")
        dst = os.path.join(self.dir, "o.safetensors")
        checkpoints.convert(src, dst, format="nunchaku")
        with open(dst, "rb") as f, open(fixture("expected", "nunchaku.safetensors"), "rb") as g:
            self.assertEqual(f.read(), g.read())

    def test_refusals(self):
        int4 = json.dumps({"method": "svdquant", "weight": {"dtype": "int4", "group_size": 64}})

        def bf16_wscales(t):
            for name in list(t):
                if name.endswith(".wscales") and t[name][0] == "F8_E4M3":
                    t[name] = ("BF16", np.zeros((8, 256), np.uint16))
        rows = [
            ("modelopt-svd", None, {"config.json": {"quantization_config": {
                "quant_method": "modelopt", "quant_algo": "NVFP4_AWQ"}}}, None,
             r'quant_algo = "NVFP4_AWQ": ModelOpt NVFP4_AWQ, not supported \(only NVFP4 and '
             r'NVFP4_SVD\)'),
            ("modelopt-svd", lambda t: [t.pop(n) for n in list(t) if "svdquant_lora" in n],
             {"config.json": None}, None, r"1 tensors <layer>\.pre_quant_scale without "
             r"NVFP4_SVD's config or svdquant_lora_a: ModelOpt AWQ smoothing"),
            ("nunchaku", None, None, {"quantization_config": int4},
             r'method "svdquant", weight dtype "int4", group_size 64 \(Nunchaku\): Nunchaku '
             r'SVDQuant, not NVFP4'),
            ("nunchaku", bf16_wscales, None, {}, r"<layer>\.qweight with 16-bit \.wscales: "
             r"Nunchaku INT4 SVDQuant, not NVFP4"),
            ("nunchaku", None, {"config.json": {"quantization_config": {
                "quant_method": "svdquant"}}}, None, r'quant_method = "svdquant": vLLM-Omni\'s '
             r"SVDQuant checkpoint .* not Nunchaku's packed one: not supported"),
        ]
        for fmt, mutate, configs, meta, regex in rows:
            with self.subTest(regex=regex):
                src = self.src_copy(fmt, mutate, configs, meta)
                with self.assertRaisesRegex(CheckpointError, regex):
                    checkpoints.detect(src)


class Convert(Base):
    def test_files_bit_for_bit(self):
        for fmt in ("modelopt-svd", "nunchaku"):
            with self.subTest(fmt=fmt):
                dst = os.path.join(self.dir, fmt + ".safetensors")
                m = checkpoints.convert(fixture(fmt), dst)
                with open(dst, "rb") as f, open(fixture("expected", fmt + ".safetensors"),
                                                "rb") as g:
                    self.assertEqual(f.read(), g.read(), "%s: converted bytes differ" % fmt)
                rows = sorted((r for r in LAYERS if r[0] == fmt), key=lambda r: r[1])
                self.assertEqual([(l["name"], l["calibration_required"], l["act_smooth"],
                                   l["lowrank"]) for l in m["layers"]],
                                 [(r[1], not r[3], r[4], r[5]) for r in rows])
        self.assertEqual(m["skipped_layers"], {"transformer_blocks.0.norm1.linear": "Nunchaku "
                                               "AWQ W4A16 layer (int4 weights, 16-bit "
                                               "activations), not NVFP4"})

    def test_op_output_equals_the_same_operands_passed_directly(self):
        # Converting in memory, the converted file and the expected operands read straight from
        # the file give the op the same bits, options included.
        x = reference()["x"]
        for fmt, layer, _, _, _, _ in LAYERS:
            with self.subTest(fmt=fmt, layer=layer):
                dst = os.path.join(self.dir, fmt + ".safetensors")
                if not os.path.exists(dst):
                    checkpoints.convert(fixture(fmt), dst)
                routes = [checkpoints.convert_layer(fixture(fmt), layer),
                          checkpoints.load_layer(dst, layer),
                          checkpoints.load_converted(dst)[layer]]
                raw, _ = st.load(fixture("expected", fmt + ".safetensors"))
                direct = {b: (np.array(raw[layer + "." + b].array) if layer + "." + b in raw
                              else None) for b in ("o_weight_q", "o_weight_sf",
                                                   "o_weight_global_scale", "act_smooth",
                                                   "lora_down", "lora_up")}
                a_gs = act_scale(routes[0], x)
                want = run_op(x, routes[0], a_gs, **direct)
                for r in routes:
                    for b in direct:
                        if direct[b] is None:
                            self.assertIsNone(getattr(r, b), b)
                    np.testing.assert_array_equal(run_op(x, r, a_gs), want)


class Bound(Base):
    def bound(self, fmt, ckpt, layer, c):
        """The elementwise bound of checkpoint_svd's docstring (float64 slack 2^-40)."""
        t = ckpt.tensors
        if fmt == "modelopt-svd":
            res = np.abs(cf.source_dequantize("modelopt", t, layer))
            pqs = (np.abs(cs._values(t[layer + ".pre_quant_scale"]))
                   if layer + ".pre_quant_scale" in t else np.ones(c.in_features))
            b = U24 * res * pqs[None, :]
            if layer + ".svdquant_lora_a" in t and t[layer + ".svdquant_lora_a"].dtype != "BF16":
                ab = (np.abs(cs._values(t[layer + ".svdquant_lora_b"]))
                      @ np.abs(cs._values(t[layer + ".svdquant_lora_a"])))
                b = b + (2 * U8 + U8 * U8) * ab * pqs[None, :]
            return b * (1 + 2.0 ** -40)
        n, k = c.out_features, c.in_features
        s = np.abs(cn.unpack_nunchaku_channels(cs._values(t[layer + ".smooth_factor"]), k))
        q = t[layer + ".qweight"]
        res = np.abs(cf.E2M1_VALUES[cf._codes(cn.unpack_nunchaku_codes(q.array, n, k))]
                     .reshape(n, k // 16, 16) * cf.e4m3_value(cn.unpack_nunchaku_block_scales(
                         t[layer + ".wscales"].array, n, k))[:, :, None]).reshape(n, k)
        res = res * cs._values(t[layer + ".wtscale"]).reshape(-1)[0]
        r = t[layer + ".proj_down"].shape[1]
        ud = (np.abs(cn.unpack_nunchaku_lowrank(cs._values(t[layer + ".proj_up"]), n, r, False))
              @ np.abs(cn.unpack_nunchaku_lowrank(cs._values(t[layer + ".proj_down"]), k, r,
                                                  True)))
        smooth = (s != 1).any()
        return ((2 * U24 + U24 * U24) * res / s[None, :]
                + (U8 + U24 + 2.0 ** -32 if smooth else 0.0) * ud) * (1 + 2.0 ** -40)

    def check(self, fmt, ckpt, layer, rounded):
        c = checkpoints.convert_layer(ckpt, layer, fmt)
        ours = cs.effective_weight(c)
        src = cf.source_dequantize(fmt, ckpt.tensors, layer)
        err = np.abs(ours - src)
        self.assertTrue((err <= self.bound(fmt, ckpt, layer, c)).all(),
                        "max excess %g" % (err - self.bound(fmt, ckpt, layer, c)).max())
        if rounded:
            self.assertGreater(err.max(), 0.0)  # the conversion did round
        return err

    def test_effective_weight_within_the_stated_bound(self):
        # Nunchaku's FF layer has no smoothing and a power-of-two wtscale: nothing rounds, and
        # its effective weight is the source's exactly.
        for fmt, layer, _, _, _, _ in LAYERS:
            with self.subTest(fmt=fmt, layer=layer):
                exact = (fmt, layer) == ("nunchaku", FF)
                err = self.check(fmt, checkpoints.open_checkpoint(fixture(fmt)), layer,
                                 not exact)
                if exact:
                    self.assertEqual(err.max(), 0.0)

    def test_modelopt_factors_in_f16_and_f32(self):
        # ModelOpt stores the factors in the model's dtype: from F16 or F32 each value is
        # rounded once to bf16, within the bound's (2^-7 + 2^-16) |B| |A| |pqs| term.
        rng = np.random.default_rng(3)
        for dtype in ("F16", "F32"):
            def mutate(t, dtype=dtype):
                for n in (ATTN + ".svdquant_lora_a", ATTN + ".svdquant_lora_b"):
                    v = bf16.to_float32(t[n][1]) * (1 + rng.uniform(-2 ** -9, 2 ** -9,
                                                                   t[n][1].shape))
                    t[n] = (dtype, v.astype(np.float16 if dtype == "F16" else np.float32))
            with self.subTest(dtype=dtype):
                src = self.src_copy("modelopt-svd", mutate)
                self.check("modelopt-svd", checkpoints.open_checkpoint(src), ATTN, True)
                c = checkpoints.convert_layer(src, ATTN)
                self.assertIn(ATTN + ".svdquant_lora_a %s: each value rounded to bf16 "
                              "(nearest-even, relative error <= 2^-8)" % dtype, c.notes)

    def test_nunchaku_smoothing_by_multiplication(self):
        # Nunchaku computes bf16(x / s); ours bf16(f32(x) * RN(1 / s)). Both are one of the two
        # bf16 neighbours of the exact x / s; ours is the nearest one except where x / s lies
        # within ~2^-23 (relative) of a midpoint between two bf16 values.
        rng = np.random.default_rng(7)
        x = bf16.from_float32(rng.standard_normal(1 << 20).astype(np.float32)
                              * np.exp2(rng.integers(-20, 20, 1 << 20)).astype(np.float32))
        s = bf16.from_float32(np.exp(rng.uniform(-6, 6, 1 << 20)).astype(np.float32))
        xf, sf = bf16.to_float32(x).astype(np.float64), bf16.to_float32(s).astype(np.float64)
        exact = xf / sf
        ours = bf16.to_float32(bf16.from_float32(bf16.to_float32(x) * (
            np.float32(1) / bf16.to_float32(s)))).astype(np.float64)
        lo = FX.bf16_round64(exact).astype(np.float64)  # the nearest
        ulp = np.ldexp(1.0, np.frexp(np.abs(exact))[1] - 8)
        self.assertTrue((np.abs(ours - exact) < ulp).all())
        miss = ours != lo
        self.assertLess(miss.mean(), 1e-4)
        mid = np.abs(np.abs(exact - lo) - ulp / 2) / np.abs(exact)
        self.assertTrue((mid[miss] <= 2.0 ** -22).all())


class WrongLayouts(Base):
    def test_wrong_readings_are_far_off(self):
        # The right operands are within W4A4's error of the bf16 layer (relative Frobenius norm
        # of the output, M = 64 with outlier channels: 0.072 / 0.134 ModelOpt, 0.073 / 0.107
        # Nunchaku); each misreading below is far from it (0.80 to 1.16; a smoothing multiplied
        # instead of divided: 343), except the block scales' permutation (see there).
        ref = reference()
        x = ref["x"]
        xf = bf16.to_float32(x).astype(np.float64)
        for fmt, layer, wname, _, smooth, rank in LAYERS:
            with self.subTest(fmt=fmt, layer=layer):
                ckpt = checkpoints.open_checkpoint(fixture(fmt))
                t = ckpt.tensors
                c = checkpoints.convert_layer(ckpt, layer)
                y = xf @ bf16.to_float32(ref[wname]).astype(np.float64).T
                n, k = c.out_features, c.in_features

                def err(**override):
                    got = dict(c._asdict(), **override)
                    cc = cf.ConvertedLayer(**got)
                    out = bf16.to_float32(run_op(x, cc, act_scale(cc, x)))
                    return np.linalg.norm(out - y) / np.linalg.norm(y)
                right = err()
                self.assertLess(right, 0.2)
                wrong = {}
                if fmt == "nunchaku":
                    wrong["qweight read row-major"] = dict(o_weight_q=np.array(
                        t[layer + ".qweight"].array).view(np.uint8))
                    # Scales moved inside Nunchaku's 128-row tiles land on blocks of similar
                    # magnitude (the residual's outliers went to the branch): 2.6x the right
                    # error here (0.19 / 0.27 against 0.073 / 0.107), not "far".
                    self.assertGreater(err(o_weight_sf=cf.swizzle(np.array(
                        t[layer + ".wscales"].array).T)), 2 * right)
                    wrong["proj_down / proj_up read row-major"] = dict(
                        lora_down=np.ascontiguousarray(np.array(t[layer + ".proj_down"].array).T),
                        lora_up=np.array(t[layer + ".proj_up"].array))
                    if smooth:
                        wrong["smooth_factor multiplied"] = dict(act_smooth=(np.float32(1)
                                                                             / c.act_smooth))
                elif rank:
                    a = np.array(t[layer + ".svdquant_lora_a"].array)
                    wrong["svdquant_lora_a's bytes read as [K, r]"] = dict(
                        lora_down=np.ascontiguousarray(a.reshape(k, rank).T))
                    wrong["lora_b's rank order reversed"] = dict(
                        lora_up=np.ascontiguousarray(c.lora_up[:, ::-1]))
                    wrong["pre_quant_scale dropped"] = dict(act_smooth=None)
                else:
                    wrong["scales linear as swizzled"] = dict(o_weight_sf=np.pad(
                        cf.unswizzle(c.o_weight_sf, n, k // 16), ((0, 0), (0, 0))))
                for what, override in wrong.items():
                    with self.subTest(what=what):
                        self.assertGreater(err(**override), 0.5, what)


class BadFiles(Base):
    """Each row: a fixture with one thing wrong; convert refuses it, naming the tensor and the
    problem, and writes nothing."""

    def rows(self):
        a, b, p = ATTN + ".svdquant_lora_a", ATTN + ".svdquant_lora_b", ATTN + ".pre_quant_scale"

        def drop(name):
            return lambda t: t.pop(name)

        def put(name, dtype, array):
            return lambda t: t.__setitem__(name, (dtype, array))

        def poke(name, index, value):
            def f(t):
                v = t[name][1].copy()
                v[index] = value
                t[name] = (t[name][0], v)
            return f

        def rank(r, down, up, packed=False):
            def f(t):
                k, n = 512, 256
                t[down] = ("BF16", np.full((k, r) if packed else (r, k), 0x3C00, np.uint16))
                t[up] = ("BF16", np.full((n, r), 0x3C00, np.uint16))
            return f
        d, u = ATTN + ".proj_down", ATTN + ".proj_up"
        bf = lambda v: bf16.from_float32(np.asarray(v, np.float32))  # noqa: E731
        ones = bf(np.ones(256))
        mo, nu = "modelopt-svd", "nunchaku"
        return [
            (mo, "missing svdquant_lora_b", drop(b), r"layer '%s': '%s' is missing \(the "
             r"low-rank up-projection \[N, r\], given with '%s'\)" % (ATTN, b, a)),
            (mo, "missing svdquant_lora_a", drop(a), r"'%s' is missing \(the low-rank "
             r"down-projection \[r, K\], given with '%s'\)" % (a, b)),
            (mo, "rank 40", rank(40, a, b), r"tensor '%s' \(SVDQuant down-projection\) \[r, K\] "
             r"= \[40, 512\]: the op takes a rank r that is a multiple of 16 in 16..64 \(contract "
             r"section 13\), got r = 40" % a),
            (mo, "rank 80", rank(80, a, b), r"got r = 80"),
            (mo, "rank 128", rank(128, a, b), r"got r = 128"),
            (mo, "rank 8", rank(8, a, b), r"got r = 8"),
            (mo, "lora_a and lora_b swapped",
             lambda t: t.update({a: t[b], b: t[a]}),
             r"tensor '%s' \(SVDQuant down-projection\) must have shape \[r, K\] = \[r, 512\] "
             r"\(K from %s.weight\), got \[256, 32\]" % (a, ATTN)),
            (mo, "lora_a transposed",
             lambda t: t.update({a: ("BF16", np.ascontiguousarray(t[a][1].T))}),
             r"must have shape \[r, K\] = \[r, 512\] .*got \[512, 32\]"),
            (mo, "lora_b of another rank", put(b, "BF16", np.zeros((256, 16), np.uint16)),
             r"tensor '%s' \(SVDQuant up-projection\) must have shape \[N, r\] = \[256, 32\] "
             r"\(N from %s.weight, r from %s\), got \[256, 16\]" % (b, ATTN, a)),
            (mo, "pre_quant_scale of N", put(p, "BF16", ones),
             r"tensor '%s' \(smoothing factors, multiplied into x\) must have shape \[K\] = "
             r"\[512\], got \[256\]" % p),
            (mo, "pre_quant_scale of the wrong dtype", put(p, "U8", np.ones(512, np.uint8)),
             r"tensor '%s' \(smoothing factors, multiplied into x\) must be BF16 or F16 or F32, "
             r"got dtype U8" % p),
            (mo, "a NaN smoothing factor", poke(p, 7, 0x7FC0),
             r"tensor '%s' \(smoothing factors\) must be finite, got nan at \[7\]" % p),
            (mo, "an infinite lora_a value", poke(a, (3, 9), 0x7F80),
             r"tensor '%s' \(SVDQuant down-projection\) must be finite, got inf at \[3, 9\]" % a),
            (mo, "an F32 lora_b value bf16 rounds to Inf",
             lambda t: t.update({b: ("F32", np.full((256, 32), 3.4e38, np.float32))}),
             r"tensor '%s' \(SVDQuant up-projection rounded to bf16\) must be finite, got inf"
             % b),
            (mo, "a nonzero bias", put(ATTN + ".bias", "BF16", bf(np.eye(1, 256, 5)[0])),
             r"tensor '%s.bias' \(bias\) must be all zero: the op computes no bias, got 1.0 at "
             r"\[5\] \(1 nonzero\)" % ATTN),
            (nu, "missing proj_up", drop(u), r"layer '%s': '%s' is missing \(the low-rank "
             r"up-projection \[N, r\], given with '%s'\)" % (ATTN, u, d)),
            (nu, "rank 128 (Nunchaku's r128 checkpoints)", rank(128, d, u, packed=True),
             r"tensor '%s' \(low-rank down-projection\) \[K, r\] = \[512, 128\]: the op takes "
             r"a rank r that is a multiple of 16 in 16..64 .*got r = 128" % d),
            (nu, "rank 8", rank(8, d, u, packed=True), r"got r = 8"),
            (nu, "proj_down of another K", put(d, "BF16", np.zeros((256, 32), np.uint16)),
             r"tensor '%s' \(low-rank down-projection, packed\) must have shape \[K, r\] = "
             r"\[512, r\] \(K from %s.qweight\), got \[256, 32\]" % (d, ATTN)),
            (nu, "wscales transposed", lambda t: t.update({ATTN + ".wscales": (
                "F8_E4M3", np.ascontiguousarray(t[ATTN + ".wscales"][1].T))}),
             r"tensor '%s.wscales' \(block scales, Nunchaku's fragment order\) must have shape "
             r"\[K/16, N\] = \[32, 256\] for codes \[256, 256\], got \[256, 32\]" % ATTN),
            (nu, "a NaN block scale", poke(ATTN + ".wscales", (2, 3), 0x7F),
             r"tensor '%s.wscales' \(block scales\) must hold UE4M3 values .* got 0x7f at "
             r"\[2, 3\]" % ATTN),
            (nu, "N not a multiple of 128", lambda t: t.update({ATTN + ".qweight": (
                "I8", t[ATTN + ".qweight"][1][:200].copy())}),
             r"tensor '%s.qweight' \(packed E2M1 codes\) \[N, K/2\] = \[200, 256\]: Nunchaku "
             r"packs codes in 128 x 128 tiles .* got N = 200, K = 512" % ATTN),
            (nu, "wcscales not all 1", put(ATTN + ".wcscales", "BF16", FX.nun_pack_scale(
                bf(np.where(np.arange(256) == 9, 0.5, 1.0)))),
             r"tensor '%s.wcscales' \(per-output-channel weight scale\) must be all 1: no "
             r"operand of this op scales output channels, got 0.5 at \[9\] \(1 of 256 not 1\)"
             % ATTN),
            (nu, "a nonzero bias", put(ATTN + ".bias", "BF16", FX.nun_pack_scale(
                bf(np.eye(1, 256, 17)[0] * 3))),
             r"tensor '%s.bias' \(bias\) must be all zero: the op computes no bias, got 3.0 at "
             r"\[17\]" % ATTN),
            (nu, "a zero smoothing divisor", poke(ATTN + ".smooth_factor", 4, 0),
             r"tensor '%s.smooth_factor' \(smoothing divisor\) must be nonzero with a finite "
             r"float32 reciprocal, got 0.0 at \[\d+\]" % ATTN),
            (nu, "missing smooth_factor", drop(ATTN + ".smooth_factor"),
             r"tensor '%s.smooth_factor' \(smoothing divisor\) is missing \(BF16 or F16\)"
             % ATTN),
            (nu, "a negative wtscale", put(ATTN + ".wtscale", "BF16", bf([-1.0])),
             r"tensor '%s.wtscale' \(alpha\) must be finite and > 0, got -1.0" % ATTN),
            (nu, "a wtscale of two values", put(ATTN + ".wtscale", "BF16", bf([1.0, 1.0])),
             r"tensor '%s.wtscale' \(per-tensor alpha, .*\) must have shape \[\] or \[1\], got "
             r"\[2\]" % ATTN),
        ]

    def test_table(self):
        for fmt, what, mutate, regex in self.rows():
            with self.subTest(what=what):
                src = self.src_copy(fmt, mutate)
                dst = os.path.join(self.dir, "dst.safetensors")
                with self.assertRaisesRegex(CheckpointError, regex):
                    checkpoints.convert(src, dst)
                self.assertFalse(os.path.exists(dst))
                self.assertFalse(os.path.exists(checkpoints.manifest_path(dst)))

    def test_int4_layer_skipped_and_refused(self):
        # A layer with 16-bit wscales is Nunchaku's INT4 SVDQuant: listed as skipped, and
        # refused when asked for by name.
        src = self.src_copy("nunchaku", lambda t: t.update({ATTN + ".wscales": (
            "BF16", np.zeros((32, 256), np.uint16))}))
        self.assertEqual(checkpoints.list_layers(src)[1:], (
            [FF], {ATTN: "Nunchaku INT4 SVDQuant layer (wscales BF16), not NVFP4",
                   "transformer_blocks.0.norm1.linear": "Nunchaku AWQ W4A16 layer (int4 "
                   "weights, 16-bit activations), not NVFP4"}))
        with self.assertRaisesRegex(CheckpointError, r"tensor '%s.wscales' is BF16: Nunchaku "
                                    r"INT4 SVDQuant \(16-bit group-64 scales\), not NVFP4" % ATTN):
            checkpoints.convert_layer(src, ATTN, "nunchaku")

    def test_rank_48_converts_and_runs(self):
        rng = np.random.default_rng(1)

        def mutate(t):
            t[ATTN + ".svdquant_lora_a"] = ("BF16", bf16.from_float32(
                rng.standard_normal((48, 512)).astype(np.float32) * np.float32(0.01)))
            t[ATTN + ".svdquant_lora_b"] = ("BF16", bf16.from_float32(
                rng.standard_normal((256, 48)).astype(np.float32) * np.float32(0.01)))
        c = checkpoints.convert_layer(self.src_copy("modelopt-svd", mutate), ATTN)
        self.assertEqual((c.lora_down.shape, c.lora_up.shape), ((48, 512), (256, 48)))
        x = reference()["x"]
        self.assertEqual(run_op(x, c, act_scale(c, x)).shape, (64, 256))

    def test_converted_file_checked_when_read(self):
        l_ = ATTN
        rows = [
            (lambda t: t.pop(l_ + ".lora_up"), r"layer '%s': '%s.lora_up' is missing \(given with "
             r"'%s.lora_down'\)" % (l_, l_, l_)),
            (lambda t: t.update({l_ + ".lora_down": ("BF16", t[l_ + ".lora_down"][1][:8].copy())}),
             r"tensor '%s.lora_down' must have shape \[r, K\] = \[r, 512\], r a multiple of 16 in "
             r"16..64, got \[8, 512\]" % l_),
            (lambda t: t.update({l_ + ".act_smooth": ("F32", np.full(512, np.nan, np.float32))}),
             r"tensor '%s.act_smooth' must be finite, got a non-finite value at \[0\]" % l_),
            (lambda t: t.update({l_ + ".lora_up": ("F32", np.zeros((256, 32), np.float32))}),
             r"tensor '%s.lora_up' \(lora_up\) must be BF16, got dtype F32" % l_),
        ]
        for mutate, regex in rows:
            with self.subTest(regex=regex):
                tensors, meta = _tensors(fixture("expected", "nunchaku.safetensors"))
                mutate(tensors)
                path = os.path.join(self.dir, "ours.safetensors")
                st.save(path, tensors, meta)
                with self.assertRaisesRegex(CheckpointError, regex):
                    checkpoints.load_converted(path)


class Unpacking(Base):
    def test_unpack_inverts_the_packer_at_other_shapes(self):
        # The fixture script's NumPy packers (NunchakuWeightPacker's reshape / permute),
        # inverted by checkpoint_svd's unpacking at shapes beyond the fixtures'.
        rng = np.random.default_rng(11)
        for n, k in ((128, 128), (384, 256), (256, 1024)):
            with self.subTest(n=n, k=k):
                codes = rng.integers(0, 16, (n, k)).astype(np.uint8)
                got = cn.unpack_nunchaku_codes(FX.nun_pack_weight(codes), n, k)
                np.testing.assert_array_equal(got, FX.pack(codes))
                sf = rng.integers(0, 127, (n, k // 16)).astype(np.uint8)
                np.testing.assert_array_equal(
                    cn.unpack_nunchaku_block_scales(FX.nun_pack_micro_scale(sf), n, k), sf)
                v = rng.integers(0, 1 << 16, k).astype(np.uint16)
                np.testing.assert_array_equal(
                    cn.unpack_nunchaku_channels(FX.nun_pack_scale(v), k), v)
                for r in cs.RANKS:
                    down = rng.integers(0, 1 << 16, (r, k)).astype(np.uint16)
                    up = rng.integers(0, 1 << 16, (n, r)).astype(np.uint16)
                    np.testing.assert_array_equal(cn.unpack_nunchaku_lowrank(
                        FX.nun_pack_lowrank(down, True), k, r, True), down)
                    np.testing.assert_array_equal(cn.unpack_nunchaku_lowrank(
                        FX.nun_pack_lowrank(up, False), n, r, False), up)

    def test_smooth_factor_orig_differing_is_noted(self):
        def mutate(t):
            t[FF + ".smooth_factor_orig"] = ("BF16", FX.nun_pack_scale(bf16.from_float32(
                np.full(512, 2.0, np.float32))))
        c = checkpoints.convert_layer(self.src_copy("nunchaku", mutate), FF)
        self.assertIn("%s.smooth_factor_orig differs from smooth_factor (unused at run time): "
                      "Nunchaku folded the smoothing into the layer before this one, whose "
                      "output is this layer's input" % FF, c.notes)
        self.assertIsNone(c.act_smooth)


@unittest.skipIf(torch is None, "torch is not importable")
class Modules(Base):
    def test_from_checkpoint_and_load_state_dict(self):
        from minimax_h3_nvfp4 import MiniMaxH3NVFP4OutProj, NVFP4GatedResidualLinear
        from minimax_h3_nvfp4 import quality
        ref = reference()
        x = torch.from_numpy(ref["x"].view(np.int16)).view(torch.bfloat16)
        for fmt, layer, _, has_act, smooth, rank in LAYERS:
            with self.subTest(fmt=fmt, layer=layer):
                dst = os.path.join(self.dir, fmt + ".safetensors")
                if not os.path.exists(dst):
                    checkpoints.convert(fixture(fmt), dst)
                kw = {} if has_act else {"calibration_sample": x}
                a = NVFP4GatedResidualLinear.from_checkpoint(fixture(fmt), layer, **kw)
                b = MiniMaxH3NVFP4OutProj.from_checkpoint(dst, layer, **kw)
                c_ = checkpoints.convert_layer(fixture(fmt), layer)
                for m in (a, b):
                    self.assertEqual(m.act_smooth is not None, smooth)
                    self.assertEqual(0 if m.lora_down is None else m.lora_down.shape[0], rank)
                    if smooth:
                        np.testing.assert_array_equal(m.act_smooth.numpy(), c_.act_smooth)
                    if rank:
                        self.assertEqual(m.lora_down.dtype, torch.bfloat16)
                        np.testing.assert_array_equal(
                            m.lora_down.view(torch.int16).numpy().view(np.uint16), c_.lora_down)
                        np.testing.assert_array_equal(
                            m.lora_up.view(torch.int16).numpy().view(np.uint16), c_.lora_up)
                if not has_act:  # calibrated on x' (contract 12)
                    want = calibration.act_global_scale(
                        x if a.act_smooth is None else quality.smooth_activations(x, a.act_smooth))
                    self.assertTrue(torch.equal(a.act_global_scale, want.reshape(1)))
                n = a.out_features
                c = NVFP4GatedResidualLinear(torch.zeros(n, 512, dtype=torch.bfloat16), 1.0)
                c.load_state_dict(checkpoints.state_dict(dst, layer), strict=has_act)
                if not has_act:
                    c.calibrate(x)
                res = torch.zeros(64, n, dtype=torch.bfloat16)
                gate = torch.ones(1, n, dtype=torch.bfloat16)
                idx = torch.zeros(64, dtype=torch.int32)
                ya = a(x, res, gate, idx)
                for m in (b, c):
                    self.assertTrue(torch.equal(m(x, res, gate, idx).view(torch.int16),
                                                ya.view(torch.int16)))
                want = minimax_h3_nvfp4_out_proj(
                    ref["x"], c_.o_weight_q, c_.o_weight_sf, c_.o_weight_global_scale,
                    a.act_global_scale.numpy(), bf16.from_float32(np.ones((1, n), np.float32)),
                    np.zeros(64, np.int32), np.zeros((64, n), np.uint16),
                    act_smooth=c_.act_smooth, lora_down=c_.lora_down, lora_up=c_.lora_up)
                np.testing.assert_array_equal(ya.view(torch.int16).numpy().view(np.uint16),
                                              want)

    def test_calibration_required(self):
        from minimax_h3_nvfp4 import NVFP4GatedResidualLinear
        with self.assertRaisesRegex(ValueError, r"layer '%s' of .* has no input scale .*: "
                                    r"calibration required" % ATTN):
            NVFP4GatedResidualLinear.from_checkpoint(fixture("nunchaku"), ATTN)


class CommandLine(Base):
    def cli(self, *args):
        return subprocess.run([sys.executable, "-m", "minimax_h3_nvfp4"] + list(args),
                              capture_output=True, text=True, timeout=300)

    def test_inspect(self):
        p = self.cli("inspect", fixture("nunchaku"))
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertIn("format: nunchaku (Nunchaku SVDQuant NVFP4)", lines)
        self.assertIn('  because: safetensors metadata quantization_config: method "svdquant", '
                      'weight dtype "fp4_e2m1_all", group_size 16 (Nunchaku)', lines)
        self.assertIn("layers: 2 NVFP4", lines)
        self.assertTrue(any(l.startswith("      options: act_smooth [512]: ") and
                            l.endswith("; lora_down [32, 512], lora_up [256, 32] (rank 32)")
                            for l in lines), p.stdout)
        self.assertIn("      options: lora_down [16, 512], lora_up [256, 16] (rank 16)", lines)
        self.assertIn("  transformer_blocks.0.norm1.linear: skipped: Nunchaku AWQ W4A16 layer "
                      "(int4 weights, 16-bit activations), not NVFP4", lines)
        self.assertIn("      act_global_scale: calibration required (Nunchaku quantizes "
                      "activations per block with no global scale)", lines)
        p = self.cli("inspect", fixture("modelopt-svd"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("\nformat: modelopt-svd (NVIDIA ModelOpt NVFP4_SVD (SVDQuant))\n", p.stdout)
        self.assertIn("; lora_down [32, 512], lora_up [256, 32] (rank 32)\n", p.stdout)

    def test_convert(self):
        for fmt, calib in (("modelopt-svd", "none"), ("nunchaku", "%s, %s" % (ATTN, FF))):
            with self.subTest(fmt=fmt):
                dst = os.path.join(self.dir, fmt + ".safetensors")
                p = self.cli("convert", fixture(fmt), dst)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertRegex(p.stdout, r"^converted 2 %s layers of .*%s into .*\.safetensors"
                                 % (fmt, fmt))
                self.assertIn("  calibration required (no input scale): %s" % calib, p.stdout)
                with open(dst, "rb") as f, open(fixture("expected", fmt + ".safetensors"),
                                                "rb") as g:
                    self.assertEqual(f.read(), g.read())
        p = self.cli("convert", fixture("nunchaku"), dst, "--format", "modelopt-svd")
        self.assertEqual(p.returncode, 1)
        self.assertIn("format 'modelopt-svd' given, but the checkpoint says nunchaku", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
