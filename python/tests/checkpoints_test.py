"""Tests of minimax_h3_nvfp4.checkpoints (users' NVFP4 checkpoints -> our operands) against the
fixtures of testdata/checkpoints/ (python/tests/make_checkpoint_fixtures.py wrote them from
synthetic bf16 layers by each format's recipe): detection, conversion bit for bit, the op's
output through every route, the contract's bound (section 5.1), what wrong layouts do to the
output, a table of bad files, the modules' from_checkpoint / load_state_dict, and the command
line (inspect, convert).

    ./bazelw test //python:checkpoints_test
    PYTHONPATH=<installed package> /usr/bin/python3 python/tests/checkpoints_test.py
"""

import hashlib
import json
import os
import re
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
from minimax_h3_nvfp4 import checkpoint_formats as cf  # noqa: E402
from minimax_h3_nvfp4 import checkpoints  # noqa: E402
from minimax_h3_nvfp4 import safetensors_io as st  # noqa: E402
from minimax_h3_nvfp4.checkpoints import CheckpointError  # noqa: E402
from minimax_h3_nvfp4.diffusion_ops import minimax_h3_nvfp4_out_proj  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "testdata", "checkpoints")
SCRIPT = os.path.join(_HERE, "make_checkpoint_fixtures.py")
U = 2.0 ** -24  # the bound of section 5.1, relative

# (format, folder, layer, its bf16 layer in reference.safetensors, has an input scale)
LAYERS = [
    ("modelopt", "modelopt", "transformer_blocks.0.attn.to_out.0", "w_attn", True),
    ("modelopt", "modelopt", "transformer_blocks.0.ff.net.2", "w_ff", False),
    ("compressed-tensors", "compressed-tensors", "blocks.0.attn.to_out.0", "w_attn", True),
    ("compressed-tensors", "compressed-tensors", "blocks.0.ff.down", "w_ff", True),
    ("comfy", "comfy", "diffusion_model.blocks.0.attn.out", "w_attn", True),
    ("comfy", "comfy", "diffusion_model.blocks.0.ff.down", "w_ff200", False),
]
# (folder, format detected, a reason it gives)
DETECTED = [
    ("modelopt", "modelopt", 'hf_quant_config.json: quantization.quant_algo = "NVFP4"'),
    ("compressed-tensors", "compressed-tensors",
     'config.json: quantization_config.quant_method = "compressed-tensors", format = '
     '"nvfp4-pack-quantized"'),
    ("comfy", "comfy", '2 tensors <layer>.comfy_quant = {"format": "nvfp4"}'),
    ("expected/modelopt.safetensors", "minimax_h3_nvfp4", "safetensors metadata format"),
]


def fixture(*parts):
    return os.path.join(FIXTURES, *parts)


def reference():
    got, _ = st.load(fixture("reference.safetensors"))
    return {k: np.array(t.array) for k, t in got.items()}


def run_op(x, q, sf, w_gs, a_gs):
    """out = 0 + bf16(1 * (x_nvfp4 @ w_nvfp4^T) / (a_gs * w_gs)) on the emulator (NumPy),
    exact GEMM: bf16 bits [M, N]."""
    n, m = q.shape[0], x.shape[0]
    gate = bf16.from_float32(np.ones((1, n), np.float32))
    return minimax_h3_nvfp4_out_proj(x, q, sf, w_gs, a_gs, gate, np.zeros(m, np.int32),
                                     np.zeros((m, n), np.uint16), cpu_gemm="exact")


def act_or_calibrated(layer, x):
    if layer.act_global_scale is not None:
        return layer.act_global_scale
    amax = np.float32(np.abs(bf16.to_float32(x)).max())
    return np.array([np.float32(2688.0) / amax], np.float32)


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()


class Fixtures(Base):
    def test_the_script_writes_the_committed_bytes(self):
        # The committed files are this script's output (its NumPy recipes, either writer:
        # every file has at most one metadata key, so safetensors' bytes are ours).
        out = os.path.join(self.dir, "fx")
        p = subprocess.run([sys.executable, SCRIPT, out, "--writer", "ours"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(fixture("MANIFEST.json")) as f:
            committed = json.load(f)
        with open(os.path.join(out, "MANIFEST.json")) as f:
            fresh = json.load(f)
        self.assertEqual(sorted(committed["sha256"]), sorted(fresh["sha256"]))
        for rel, digest in sorted(committed["sha256"].items()):
            with open(fixture(rel), "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), digest, rel)
            self.assertEqual(fresh["sha256"][rel], digest, "%s: the script now writes "
                             "other bytes" % rel)


class Detect(Base):
    def test_formats(self):
        for folder, fmt, reason in DETECTED:
            with self.subTest(folder=folder):
                got, why = checkpoints.detect(fixture(folder))
                self.assertEqual(got, fmt)
                self.assertTrue(any(reason in w for w in why), why)

    def test_names_alone_are_ambiguous(self):
        # A ModelOpt file without its hf_quant_config.json: ModelOpt and comfy name their
        # tensors alike, so the error lists both; format= decides.
        shutil.copy(fixture("modelopt", "model.safetensors"), self.dir)
        path = os.path.join(self.dir, "model.safetensors")
        with self.assertRaisesRegex(CheckpointError, r"ambiguous format \(no config file or "
                                    r"marker: tensor names only\): candidates modelopt \(.*\); "
                                    r"comfy \(.*\); pass format= \(--format\) to choose"):
            checkpoints.detect(path)
        fmt, why = checkpoints.detect(path, "modelopt")
        self.assertEqual((fmt, why[0]), ("modelopt", "given (format='modelopt')"))
        with self.assertRaisesRegex(CheckpointError, "format 'modelopt' given, but the "
                                    "checkpoint says comfy"):
            checkpoints.detect(fixture("comfy"), "modelopt")

    def test_modelopt_mixed_precision(self):
        # hf_quant_config.json's MIXED_PRECISION: an algorithm per layer; NVFP4 ones convert.
        shutil.copy(fixture("modelopt", "model.safetensors"), self.dir)
        conf = {"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {
            "transformer_blocks.0.attn.to_out.0": {"quant_algo": "NVFP4", "group_size": 16},
            "transformer_blocks.0.ff.net.2": {"quant_algo": "NVFP4", "group_size": 16},
            "proj_out": {"quant_algo": "FP8"}}}}
        with open(os.path.join(self.dir, "hf_quant_config.json"), "w") as f:
            json.dump(conf, f)
        self.assertEqual(checkpoints.detect(self.dir), ("modelopt", [
            'hf_quant_config.json: quantization.quant_algo = "MIXED_PRECISION" (its layers: '
            'NVFP4)', "tensor names: 2 <layer>.weight (U8), weight_scale, weight_scale_2 "
            "(ModelOpt and comfy name theirs alike)"]))
        conf["quantization"]["quantized_layers"]["proj_out"]["quant_algo"] = "NVFP4_AWQ"
        with open(os.path.join(self.dir, "hf_quant_config.json"), "w") as f:
            json.dump(conf, f)
        with self.assertRaisesRegex(CheckpointError, r"ModelOpt NVFP4_AWQ, not supported \(only "
                                    r"NVFP4 and NVFP4_SVD\)"):
            checkpoints.detect(self.dir)

    def refused(self, tensors, configs=None, metadata=None):
        for name, doc in (configs or {}).items():
            with open(os.path.join(self.dir, name), "w") as f:
                json.dump(doc, f)
        st.save(os.path.join(self.dir, "m.safetensors"), tensors, metadata)
        with self.assertRaises(CheckpointError) as e:
            checkpoints.detect(self.dir)
        return str(e.exception)

    def test_refusals(self):
        u8 = np.zeros((4, 8), np.uint8)
        f32 = np.ones(4, np.float32)
        nvfp4 = {"l.weight": u8, "l.weight_scale": ("F8_E4M3", u8[:, :1].copy()),
                 "l.weight_scale_2": np.float32(1)}
        # (ModelOpt NVFP4_SVD and Nunchaku NVFP4 convert: python/tests/checkpoints_svd_test.py)
        rows = [
            ("Nunchaku INT4", {"l.qweight": u8.view(np.int8), "l.wscales": ("BF16", u8.astype(
                np.uint16)), "l.smooth_factor": f32}, None,
             r"<layer>\.qweight with 16-bit \.wscales: Nunchaku INT4 SVDQuant, not NVFP4"),
            ("AWQ smoothing", dict(nvfp4, **{"l.pre_quant_scale": f32}), None,
             r"1 tensors <layer>\.pre_quant_scale without NVFP4_SVD's config or "
             r"svdquant_lora_a: ModelOpt AWQ smoothing \(NVFP4_AWQ\), not supported"),
            ("FP8 ModelOpt", nvfp4, {"hf_quant_config.json": {"quantization": {
                "quant_algo": "FP8"}}}, r'quant_algo = "FP8" .*: not NVFP4'),
            ("int4 compressed-tensors", {"l.weight_packed": u8}, {"config.json": {
                "quantization_config": {"quant_method": "compressed-tensors",
                                        "format": "pack-quantized"}}},
             r'compressed-tensors format \["pack-quantized"\] is not nvfp4-pack-quantized'),
            ("nothing", {"norm.weight": f32}, None, r"no NVFP4 layers found: none of NVIDIA "
             r"ModelOpt NVFP4 \(<layer>\.weight U8, .*\); compressed-tensors"),
        ]
        for what, tensors, configs, regex in rows:
            with self.subTest(what=what):
                for f in os.listdir(self.dir):
                    os.unlink(os.path.join(self.dir, f))
                self.assertRegex(self.refused(tensors, configs), regex)


class Convert(Base):
    def test_files_bit_for_bit(self):
        for fmt in ("modelopt", "compressed-tensors", "comfy"):
            with self.subTest(fmt=fmt):
                dst = os.path.join(self.dir, fmt + ".safetensors")
                m = checkpoints.convert(fixture(fmt), dst)
                with open(dst, "rb") as f, open(fixture("expected", fmt + ".safetensors"),
                                                "rb") as g:
                    self.assertEqual(f.read(), g.read(), "%s: converted bytes differ" % fmt)
                with open(checkpoints.manifest_path(dst)) as f:
                    self.assertEqual(json.load(f), m)
                self.assertEqual(m["source"]["format"], fmt)
                want = sorted(l for f_, _, l, _, _ in LAYERS if f_ == fmt)
                self.assertEqual([l["name"] for l in m["layers"]], want)
                self.assertEqual([l["calibration_required"] for l in m["layers"]],
                                 [not inp for f_, _, l, _, inp in sorted(
                                     (r for r in LAYERS if r[0] == fmt), key=lambda r: r[2])])

    def test_layers_regex(self):
        dst = os.path.join(self.dir, "o.safetensors")
        m = checkpoints.convert(fixture("comfy"), dst, layers=r"ff\.")
        self.assertEqual([l["name"] for l in m["layers"]], ["diffusion_model.blocks.0.ff.down"])
        self.assertEqual(m["skipped_layers"], {"diffusion_model.blocks.0.attn.qkv":
                                               'marked "float8_e4m3fn", not nvfp4'})
        with self.assertRaisesRegex(CheckpointError, "no ComfyUI / comfy-kitchen NVFP4 layers "
                                    "match 'nothing'"):
            checkpoints.convert(fixture("comfy"), dst + "2", layers="nothing")
        self.assertFalse(os.path.exists(dst + "2"))

    def test_sharded_folder_and_comfy_metadata_marker(self):
        # A folder of several files converts as one checkpoint; comfy layers listed in the
        # safetensors metadata (_quantization_metadata) instead of .comfy_quant tensors too.
        for fmt, split in (("modelopt", "ff.net.2"), ("comfy", "ff.down")):
            with self.subTest(fmt=fmt):
                src = os.path.join(self.dir, fmt)
                shutil.copytree(fixture(fmt), src)
                tensors, meta = _tensors(os.path.join(src, "model.safetensors"))
                os.unlink(os.path.join(src, "model.safetensors"))
                if fmt == "comfy":
                    layers = {n[:-len(".comfy_quant")]: {"format": json.loads(
                        bytes(a).decode())["format"]} for n, (_, a) in tensors.items()
                        if n.endswith(".comfy_quant")}
                    tensors = {n: v for n, v in tensors.items() if not n.endswith(".comfy_quant")}
                    meta = {"_quantization_metadata": json.dumps({"format_version": "1.0",
                                                                  "layers": layers})}
                a = {n: v for n, v in tensors.items() if split in n}
                b = {n: v for n, v in tensors.items() if split not in n}
                st.save(os.path.join(src, "model-00001-of-00002.safetensors"), a, meta)
                st.save(os.path.join(src, "model-00002-of-00002.safetensors"), b, meta)
                dst = os.path.join(self.dir, fmt + ".safetensors")
                m = checkpoints.convert(src, dst)
                if fmt == "comfy":
                    self.assertEqual(m["source"]["detected_because"][0], "safetensors metadata "
                                     "_quantization_metadata lists 2 nvfp4 layers")
                with open(dst, "rb") as f, open(fixture("expected", fmt + ".safetensors"),
                                                "rb") as g:
                    self.assertEqual(f.read(), g.read())
                st.save(os.path.join(src, "model-00003-of-00002.safetensors"),
                        dict(list(a.items())[:1]), meta)
                with self.assertRaisesRegex(CheckpointError, r"tensor '.*' is in both "
                                            r".*model-00001-of-00002.safetensors and "
                                            r".*model-00003-of-00002.safetensors"):
                    checkpoints.convert(src, dst)

    def test_op_output_equals_the_same_operands_passed_directly(self):
        # Every route to the operands (converting in memory, the converted file, the expected
        # operands read straight from the file) gives the op the same bits.
        x = reference()["x"]
        for fmt, folder, layer, _, _ in LAYERS:
            with self.subTest(layer=layer):
                dst = os.path.join(self.dir, fmt + ".safetensors")
                if not os.path.exists(dst):
                    checkpoints.convert(fixture(folder), dst)
                routes = [checkpoints.convert_layer(fixture(folder), layer),
                          checkpoints.load_layer(dst, layer),
                          checkpoints.load_converted(dst)[layer]]
                raw, _ = st.load(fixture("expected", fmt + ".safetensors"))
                direct = [np.array(raw[layer + "." + b].array) for b in
                          ("o_weight_q", "o_weight_sf", "o_weight_global_scale")]
                a_gs = act_or_calibrated(routes[0], x)
                want = run_op(x, direct[0], direct[1], direct[2], a_gs)
                for r in routes:
                    got = run_op(x, r.o_weight_q, r.o_weight_sf, r.o_weight_global_scale, a_gs)
                    np.testing.assert_array_equal(got, want)
                # A Python float global scale, as FlashInfer's API allows, is the same.
                np.testing.assert_array_equal(
                    run_op(x, direct[0], direct[1], float(direct[2][0]), a_gs), want)


class Bound(Base):
    def test_dequantized_weight_within_the_contracts_bound(self):
        # Section 5.1: against the source format's own exact dequantization, ours is within a
        # relative 2^-24 where the global scale was converted (RN(1/s)), and equal where it
        # was carried bit for bit (compressed-tensors); zeros stay zeros.
        for fmt, folder, layer, _, _ in LAYERS:
            with self.subTest(layer=layer):
                ckpt = checkpoints.open_checkpoint(fixture(folder))
                c = checkpoints.convert_layer(ckpt, layer)
                ours = cf.dequantize(c.o_weight_q, c.o_weight_sf, c.o_weight_global_scale)
                src = cf.source_dequantize(fmt, ckpt.tensors, layer)
                nz = src != 0
                np.testing.assert_array_equal(ours[~nz], 0)
                rel = np.abs(ours[nz] - src[nz]) / np.abs(src[nz])
                if fmt == "compressed-tensors":
                    self.assertEqual(rel.max(), 0.0)
                else:
                    self.assertGreater(rel.max(), 0.0)  # the conversion did round
                    self.assertLessEqual(rel.max(), U * (1 + 2.0 ** -20))  # float64 slack

    def test_the_bound_over_global_scales(self):
        # |1 / (RN(1/s) * s) - 1| <= 2^-24 for every normal s with a normal reciprocal; and it
        # is tight (some s come within 1% of it). g * s and 1 - g * s are exact in float64.
        rng = np.random.default_rng(5)
        s = np.exp2(rng.uniform(-120, 120, 200000)).astype(np.float32)
        g = np.float32(1) / s
        gs = g.astype(np.float64) * s.astype(np.float64)
        rel = np.abs(1.0 - gs) / gs
        self.assertLessEqual(rel.max(), U * (1 + 2.0 ** -28))
        self.assertGreater(rel.max(), 0.99 * U)


class WrongLayouts(Base):
    def test_swapped_nibbles_and_unswizzled_scales_are_far_off(self):
        # The sglang#23625 failures, shown caught: the right operands are within NVFP4's error
        # of the bf16 layer (W4A4 on these outlier-laden activations: ~0.16 relative, Frobenius
        # norm); a nibble swap (for comfy: its file's bytes as they are) or a linear scale table
        # used as a swizzled one (for ModelOpt / compressed-tensors: theirs as they are) is ~1.4.
        ref = reference()
        x = ref["x"]
        xf = bf16.to_float32(x).astype(np.float64)
        for fmt, folder, layer, wname, _ in LAYERS:
            with self.subTest(layer=layer):
                c = checkpoints.convert_layer(fixture(folder), layer)
                w = bf16.to_float32(ref[wname]).astype(np.float64)
                y = xf @ w.T
                a_gs = act_or_calibrated(c, x)
                n = w.shape[0]
                linear = cf.unswizzle(c.o_weight_sf, c.out_features, c.in_features // 16)
                unswizzled = np.zeros_like(c.o_weight_sf)
                unswizzled.reshape(-1)[:linear.size] = linear.reshape(-1)

                def err(q, sf):
                    out = bf16.to_float32(run_op(x, q, sf, c.o_weight_global_scale, a_gs))
                    return np.linalg.norm(out[:, :n] - y) / np.linalg.norm(y)
                self.assertLess(err(c.o_weight_q, c.o_weight_sf), 0.25)
                self.assertGreater(err(cf.swap_nibbles(c.o_weight_q), c.o_weight_sf), 1.0)
                self.assertGreater(err(c.o_weight_q, unswizzled), 1.0)

    def test_comfy_padding_rows(self):
        # comfy pads N = 200 to 208: the converted layer has 208 rows, the padding rows' scales
        # are zero, and their outputs are exactly 0.
        c = checkpoints.convert_layer(fixture("comfy"), "diffusion_model.blocks.0.ff.down")
        self.assertEqual((c.out_features, c.in_features), (208, 512))
        x = reference()["x"]
        out = run_op(x, c.o_weight_q, c.o_weight_sf, c.o_weight_global_scale,
                     act_or_calibrated(c, x))
        np.testing.assert_array_equal(out[:, 200:], 0)

    def test_swizzle_against_the_goldens(self):
        # checkpoint_formats.swizzle / unswizzle against testdata's section 4 goldens.
        base = os.path.dirname(FIXTURES)
        for case in ("1x1", "5x3", "37x5", "128x4", "129x4", "130x7", "256x8", "300x9"):
            with self.subTest(case=case):
                lin = np.load(os.path.join(base, "swizzle_%s_linear.npy" % case))
                swz = np.load(os.path.join(base, "swizzle_%s_swizzled.npy" % case))
                got = cf.swizzle(lin)
                np.testing.assert_array_equal(got.reshape(-1), swz.reshape(-1))
                np.testing.assert_array_equal(cf.unswizzle(swz, *lin.shape), lin)


def _tensors(path):
    got, meta = st.load(path)
    return {k: (t.dtype, np.array(t.array)) for k, t in got.items()}, meta


class BadFiles(Base):
    """Each row: a fixture with one thing wrong; convert must refuse it, naming the tensor and
    the problem, and write nothing."""

    MO = "transformer_blocks.0.attn.to_out.0"
    CT = "blocks.0.attn.to_out.0"
    CF = "diffusion_model.blocks.0.ff.down"

    def rows(self):
        mo, ct, cfy = self.MO, self.CT, self.CF

        def drop(name):
            return lambda t: t.pop(name)

        def put(name, dtype, array):
            return lambda t: t.__setitem__(name, (dtype, array))

        def poke(name, index, value):
            def f(t):
                a = t[name][1].copy()
                a[index] = value
                t[name] = (t[name][0], a)
            return f

        def small_layer(t):  # a 64-row layer whose scales are stored as a 128-row table
            t.update({"l.weight": ("U8", t[mo + ".weight"][1][:64].copy()),
                      "l.weight_scale": ("F8_E4M3", cf.swizzle(t[mo + ".weight_scale"][1][:64])),
                      "l.weight_scale_2": t[mo + ".weight_scale_2"]})
        w, s, s2 = mo + ".weight", mo + ".weight_scale", mo + ".weight_scale_2"
        return [
            ("modelopt", "missing block scales", drop(s),
             r"layer '%s': block scales '%s' is missing \(F8_E4M3\)" % (mo, s)),
            ("modelopt", "missing global scale", drop(s2),
             r"layer '%s': global scale '%s' is missing \(F32\)" % (mo, s2)),
            ("modelopt", "codes of the wrong dtype",
             put(w, "BF16", np.zeros((256, 512), np.uint16)),
             r"tensor '%s' \(packed E2M1 codes\) must be U8, got dtype BF16" % w),
            ("modelopt", "scales of the wrong dtype", put(s, "U8", np.zeros((256, 32), np.uint8)),
             r"tensor '%s' \(block scales\) must be F8_E4M3, got dtype U8" % s),
            ("modelopt", "scales of the wrong shape",
             put(s, "F8_E4M3", np.full((256, 31), 0x38, np.uint8)),
             r"tensor '%s' \(block scales\) must have shape \[N, K/16\] = \[256, 32\] for codes "
             r"\[256, 256\], got \[256, 31\]$" % s),
            ("modelopt", "a swizzled table where the format stores scales linear", small_layer,
             r"tensor 'l.weight_scale' \(block scales\) must have shape \[N, K/16\] = \[64, 32\] "
             r".*got \[128, 32\] \(that is the 128x4 swizzled table's shape"),
            ("modelopt", "a NaN scale byte", poke(s, (3, 5), 0x7F),
             r"tensor '%s' \(block scales\) must hold UE4M3 values \(0x00..0x7E: sign 0, not "
             r"NaN\), got 0x7f at \[3, 5\] \(1 such bytes\)" % s),
            ("modelopt", "a negative scale byte", poke(s, (0, 0), 0xB8),
             r"got 0xb8 at \[0, 0\]"),
            ("modelopt", "a zero global scale", put(s2, "F32", np.array(0, np.float32)),
             r"tensor '%s' \(global scale\) must be finite and > 0, got 0.0" % s2),
            ("modelopt", "a NaN global scale", put(s2, "F32", np.array(np.nan, np.float32)),
             r"must be finite and > 0, got nan"),
            ("modelopt", "a negative input scale",
             put(mo + ".input_scale", "F32", np.array(-1, np.float32)),
             r"tensor '%s.input_scale' \(input scale\) must be finite and > 0, got -1.0" % mo),
            ("modelopt", "a global scale whose reciprocal overflows",
             put(s2, "F32", np.array(2.0 ** -130, np.float32)),
             r"its reciprocal 1/x is not a normal float32 \(inf\)"),
            ("modelopt", "a global scale that is not a scalar",
             put(s2, "F32", np.ones(2, np.float32)),
             r"tensor '%s' \(global scale\) must be a scalar \(shape \[\] or \[1\]\), got "
             r"shape \[2\]" % s2),
            ("modelopt", "K the op cannot take",
             lambda t: t.update({w: ("U8", t[w][1][:, :8].copy()),
                                 s: ("F8_E4M3", t[s][1][:, :1].copy())}),
             r"tensor '%s' \(packed E2M1 codes\) \[N, K/2\] = \[256, 8\]: the op takes K a "
             r"multiple of 64, got K = 16" % w),
            ("compressed-tensors", "missing global scale", drop(ct + ".weight_global_scale"),
             r"global scale '%s.weight_global_scale' is missing" % ct),
            ("compressed-tensors", "a weight_shape contradicting the codes",
             put(ct + ".weight_shape", "I64", np.array([256, 1024], np.int64)),
             r"tensor '%s.weight_shape' must be \[N, K\] = \[256, 512\] for codes \[256, 256\], "
             r"got \[256, 1024\]" % ct),
            ("comfy", "a linear table where comfy stores it swizzled",
             put(cfy + ".weight_scale", "F8_E4M3", np.full((208, 32), 0x38, np.uint8)),
             r"tensor '%s.weight_scale' \(block scales\) must be the 128x4 swizzled table "
             r"\[256, 32\] \(or its 8192 bytes flat\) for codes \[208, 256\], got shape \[208, 32\]"
             % cfy),
            ("comfy", "rows not padded to 16",
             lambda t: t.update({cfy + ".weight": ("U8", t[cfy + ".weight"][1][:200].copy())}),
             r"comfy-kitchen pads rows to a multiple of 16, got N = 200"),
        ] + self.bias_rows()

    def bias_rows(self):
        # A `<layer>.bias`: the op computes none (out = residual + gate * o), so a nonzero one
        # is refused (before: dropped silently), as are one of another shape or dtype; an
        # all-zero one converts (Bias below). comfy's N = 200 is padded to 208 in the codes.
        mo, ct, cfy = self.MO + ".bias", self.CT + ".bias", self.CF + ".bias"

        def bf(v):
            return bf16.from_float32(np.asarray(v, np.float32))

        def one(n, i, v, dtype=np.float32):
            a = np.zeros(n, dtype)
            a[i] = v
            return a

        def nonzero(name, at, value, count=1):
            return (r"tensor '%s' \(bias\) must be all zero: the op computes no bias, got %s at "
                    r"\[%d\] \(%d nonzero\)$" % (name, re.escape(value), at, count))

        def shape(name, want, got):
            return (r"tensor '%s' \(bias\) must be BF16, F16 or F32 \[N\] = \[%s\], got %s$"
                    % (name, want, got))
        comfy_n = r"193 \.\. 208: the codes' 208 rows are N padded to a multiple of 16"
        rows = [
            ("modelopt", "a nonzero BF16 bias", mo, "BF16", bf(one(256, 5, 0.25)),
             nonzero(mo, 5, "0.25")),
            ("modelopt", "a nonzero F32 bias", mo, "F32", one(256, [7, 200], [1e-30, -3]),
             nonzero(mo, 7, repr(float(np.float32(1e-30))), 2)),
            ("modelopt", "a NaN bias", mo, "F32", one(256, 9, np.nan), nonzero(mo, 9, "nan")),
            ("modelopt", "a bias [N, 1]", mo, "F32", np.zeros((256, 1), np.float32),
             shape(mo, "256", r"F32 \[256, 1\]")),
            ("modelopt", "a U8 bias", mo, "U8", np.zeros(256, np.uint8),
             shape(mo, "256", r"U8 \[256\]")),
            ("compressed-tensors", "a nonzero BF16 bias", ct, "BF16", bf(one(256, 255, -2)),
             nonzero(ct, 255, "-2.0")),
            ("compressed-tensors", "a nonzero F32 bias", ct, "F32", np.full(256, 0.5, np.float32),
             nonzero(ct, 0, "0.5", 256)),
            ("compressed-tensors", "a bias [K]", ct, "F32", np.zeros(512, np.float32),
             shape(ct, "256", r"F32 \[512\]")),
            ("comfy", "a nonzero BF16 bias [N] unpadded", cfy, "BF16", bf(one(200, 199, 1.5)),
             nonzero(cfy, 199, "1.5")),
            ("comfy", "a nonzero F32 bias [N] padded", cfy, "F32", one(208, 3, -1e-3),
             nonzero(cfy, 3, repr(float(np.float32(-1e-3))))),
            ("comfy", "a bias shorter than the padding allows", cfy, "BF16",
             np.zeros(192, np.uint16), shape(cfy, comfy_n, r"BF16 \[192\]")),
            ("comfy", "a bias longer than the codes' rows", cfy, "F32", np.zeros(209, np.float32),
             shape(cfy, comfy_n, r"F32 \[209\]")),
        ]

        def put(name, dtype, a):
            return lambda t: t.__setitem__(name, (dtype, a))
        return [(fmt, "%s (%s)" % (what, fmt), put(name, dtype, a), regex)
                for fmt, what, name, dtype, a, regex in rows]

    def test_table(self):
        for fmt, what, mutate, regex in self.rows():
            with self.subTest(what=what):
                src = os.path.join(self.dir, "src")
                shutil.rmtree(src, ignore_errors=True)
                shutil.copytree(fixture(fmt), src)
                path = os.path.join(src, "model.safetensors")
                tensors, meta = _tensors(path)
                mutate(tensors)
                st.save(path, tensors, meta)
                dst = os.path.join(self.dir, "dst.safetensors")
                with self.assertRaisesRegex(CheckpointError, regex):
                    checkpoints.convert(src, dst)
                self.assertFalse(os.path.exists(dst))
                self.assertFalse(os.path.exists(checkpoints.manifest_path(dst)))

    def test_truncated_file(self):
        with open(fixture("modelopt", "model.safetensors"), "rb") as f:
            data = f.read()
        path = os.path.join(self.dir, "model.safetensors")
        with open(path, "wb") as f:
            f.write(data[:-100])
        with self.assertRaisesRegex(CheckpointError, r"cannot read the checkpoint: safetensors: "
                                    r".*model.safetensors: tensor '.*' data_offsets must be "
                                    r".* <= \d+ \(the data's size\), got \[\d+, \d+\]"):
            checkpoints.detect(path)

    def test_converted_file_checked_when_read(self):
        path = os.path.join(self.dir, "ours.safetensors")
        tensors, meta = _tensors(fixture("expected", "modelopt.safetensors"))
        name = self.MO + ".o_weight_sf"
        tensors[name] = ("U8", tensors[name][1][:128].copy())
        st.save(path, tensors, meta)
        with self.assertRaisesRegex(CheckpointError, r"tensor '%s' must have shape \[256, 32\] "
                                    r"for o_weight_q \[256, 256\], got \[128, 32\]" % name):
            checkpoints.load_converted(path)


class Bias(Base):
    """An all-zero `<layer>.bias` (BF16 or F32, +0 and -0; comfy's unpadded [200] or padded
    [208]) is dropped with a note: the conversion and the op's output are the bias-free
    file's, bit for bit. (A nonzero one is refused: BadFiles.bias_rows.)"""

    def variants(self):
        neg = np.zeros(256, np.float32)
        neg[::3] = -0.0
        nb = bf16.from_float32(neg)  # 0x8000 at every third
        self.assertEqual(int(nb[0]), 0x8000)
        return [
            ("modelopt", {"transformer_blocks.0.attn.to_out.0": ("BF16", nb),
                          "transformer_blocks.0.ff.net.2": ("F32", neg)}),
            ("compressed-tensors", {"blocks.0.attn.to_out.0": ("F32", np.zeros(256, np.float32)),
                                    "blocks.0.ff.down": ("BF16", np.zeros(256, np.uint16))}),
            ("comfy", {"diffusion_model.blocks.0.attn.out": ("BF16", nb),
                       "diffusion_model.blocks.0.ff.down": ("F32", neg[:200])}),
            ("comfy", {"diffusion_model.blocks.0.ff.down": ("BF16", np.zeros(208, np.uint16))}),
        ]

    def test_all_zero_bias_is_dropped(self):
        x = reference()["x"]
        for i, (fmt, biases) in enumerate(self.variants()):
            with self.subTest(fmt=fmt, variant=i):
                src = os.path.join(self.dir, "src%d" % i)
                shutil.copytree(fixture(fmt), src)
                path = os.path.join(src, "model.safetensors")
                tensors, meta = _tensors(path)
                for layer, (dtype, a) in biases.items():
                    tensors[layer + ".bias"] = (dtype, a)
                st.save(path, tensors, meta)
                dst = os.path.join(self.dir, "dst%d.safetensors" % i)
                m = checkpoints.convert(src, dst)
                with open(dst, "rb") as f, open(fixture("expected", fmt + ".safetensors"),
                                                "rb") as g:
                    self.assertEqual(f.read(), g.read(), "%s: converted bytes differ" % fmt)
                for entry in m["layers"]:
                    layer = entry["name"]
                    want = checkpoints.convert_layer(fixture(fmt), layer)
                    got = checkpoints.convert_layer(src, layer)
                    note = ["%s.bias all zero: dropped (the op computes no bias)" % layer]
                    self.assertEqual(got.notes, want.notes + (note if layer in biases else []))
                    self.assertEqual(entry["notes"], got.notes)
                    for b in ("o_weight_q", "o_weight_sf", "o_weight_global_scale",
                              "act_global_scale"):
                        np.testing.assert_array_equal(getattr(got, b), getattr(want, b))
                    a_gs = act_or_calibrated(want, x)
                    np.testing.assert_array_equal(
                        run_op(x, got.o_weight_q, got.o_weight_sf, got.o_weight_global_scale,
                               a_gs),
                        run_op(x, want.o_weight_q, want.o_weight_sf, want.o_weight_global_scale,
                               a_gs))


@unittest.skipIf(torch is None, "torch is not importable")
class Modules(Base):
    def test_from_checkpoint_and_load_state_dict(self):
        from minimax_h3_nvfp4 import MiniMaxH3NVFP4OutProj, NVFP4GatedResidualLinear
        ref = reference()
        x = torch.from_numpy(ref["x"].view(np.int16)).view(torch.bfloat16)
        for fmt, folder, layer, wname, has_act in LAYERS:
            with self.subTest(layer=layer):
                dst = os.path.join(self.dir, fmt + ".safetensors")
                if not os.path.exists(dst):
                    checkpoints.convert(fixture(folder), dst)
                kw = {} if has_act else {"calibration_sample": x}
                a = NVFP4GatedResidualLinear.from_checkpoint(fixture(folder), layer, **kw)
                b = MiniMaxH3NVFP4OutProj.from_checkpoint(dst, layer, **kw)
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
                c_ = checkpoints.convert_layer(fixture(folder), layer)
                want = minimax_h3_nvfp4_out_proj(
                    ref["x"], c_.o_weight_q, c_.o_weight_sf, c_.o_weight_global_scale,
                    a.act_global_scale.numpy(), bf16.from_float32(np.ones((1, n), np.float32)),
                    np.zeros(64, np.int32), np.zeros((64, n), np.uint16))
                np.testing.assert_array_equal(ya.view(torch.int16).numpy().view(np.uint16),
                                              want)

    def test_calibration_required(self):
        from minimax_h3_nvfp4 import NVFP4GatedResidualLinear
        with self.assertRaisesRegex(ValueError, r"layer 'transformer_blocks.0.ff.net.2' of .* "
                                    r"has no input scale \(input_scale / input_global_scale\): "
                                    r"calibration required"):
            NVFP4GatedResidualLinear.from_checkpoint(fixture("modelopt"),
                                                     "transformer_blocks.0.ff.net.2")
        m = NVFP4GatedResidualLinear.from_checkpoint(fixture("modelopt"),
                                                     "transformer_blocks.0.ff.net.2", 3.5)
        self.assertEqual(m.act_global_scale.tolist(), [3.5])
        with self.assertRaisesRegex(CheckpointError, r"name the layer: 2 layers"):
            NVFP4GatedResidualLinear.from_checkpoint(fixture("modelopt"))


class CommandLine(Base):
    def cli(self, *args):
        return subprocess.run([sys.executable, "-m", "minimax_h3_nvfp4"] + list(args),
                              capture_output=True, text=True, timeout=300)

    def test_inspect(self):
        for folder, fmt, reason in DETECTED:
            with self.subTest(folder=folder):
                p = self.cli("inspect", fixture(folder))
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("\nformat: %s (" % fmt, p.stdout)
                self.assertIn("  because: " + reason, p.stdout)
        p = self.cli("inspect", fixture("comfy"))
        lines = p.stdout.splitlines()
        self.assertIn("layers: 2 NVFP4", lines)
        self.assertIn("  diffusion_model.blocks.0.ff.down: N=208 K=512; block scales 6656: 14 .. "
                      "448, 256 zero; o_weight_global_scale 5065.58447; act_global_scale: "
                      "calibration required (no input scale in the checkpoint)", lines)
        self.assertIn("      nibbles swapped (comfy-kitchen hi_first: even element in the high "
                      "nibble)", lines)
        self.assertIn("      tensors: .comfy_quant U8 [19], .weight U8 [208, 256], .weight_scale "
                      "F8_E4M3 [256, 32], .weight_scale_2 F32 []", lines)
        self.assertIn("  diffusion_model.blocks.0.attn.qkv: skipped: marked \"float8_e4m3fn\", "
                      "not nvfp4", lines)
        self.assertIn("suspicious: 1", lines)
        self.assertIn("  diffusion_model.blocks.0.ff.down: 256 of 6656 block scales are zero "
                      "(rows 200..207 all zero: comfy pads rows to a multiple of 16)", lines)

    def test_inspect_suspicious_and_refused(self):
        tensors, meta = _tensors(fixture("modelopt", "model.safetensors"))
        mo = BadFiles.MO
        tensors[mo + ".weight"] = ("U8", np.full((256, 256), 0x11, np.uint8))
        tensors[mo + ".weight_scale_2"] = ("F32", np.array(2.0, np.float32))
        sf = tensors["transformer_blocks.0.ff.net.2.weight_scale"][1].copy()
        sf[0, 0] = 0x7F
        tensors["transformer_blocks.0.ff.net.2.weight_scale"] = ("F8_E4M3", sf)
        shutil.copy(fixture("modelopt", "hf_quant_config.json"), self.dir)
        st.save(os.path.join(self.dir, "model.safetensors"), tensors, meta)
        p = self.cli("inspect", self.dir)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("%s: every code byte is 0x11 (all-equal codes)" % mo, p.stdout)
        self.assertIn("%s: o_weight_global_scale 0.5 < 1 means amax > 2688: is the source's "
                      "global scale stored in the other direction?" % mo, p.stdout)
        self.assertIn("  transformer_blocks.0.ff.net.2: REFUSED: tensor "
                      "'transformer_blocks.0.ff.net.2.weight_scale' (block scales) must hold "
                      "UE4M3 values", p.stdout)
        self.assertIn("inspect: error: 1 of 2 layers refused", p.stderr)

    def test_inspect_bias(self):
        # A nonzero bias: the layer is REFUSED and the line says why; an all-zero one is listed
        # with the layer's tensors and its note says it was dropped.
        tensors, meta = _tensors(fixture("modelopt", "model.safetensors"))
        mo, ff = BadFiles.MO, "transformer_blocks.0.ff.net.2"
        tensors[mo + ".bias"] = ("BF16", bf16.from_float32(np.eye(1, 256, 3, dtype=np.float32)[0]
                                                           * np.float32(0.5)))
        tensors[ff + ".bias"] = ("F32", np.zeros(256, np.float32))
        shutil.copy(fixture("modelopt", "hf_quant_config.json"), self.dir)
        st.save(os.path.join(self.dir, "model.safetensors"), tensors, meta)
        p = self.cli("inspect", self.dir)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        lines = p.stdout.splitlines()
        i = lines.index("  %s: REFUSED: tensor '%s.bias' (bias) must be all zero: the op computes "
                        "no bias, got 0.5 at [3] (1 nonzero)" % (mo, mo))
        self.assertEqual(lines[i + 1], "      tensors: .bias BF16 [256], .input_scale F32 [], "
                         ".weight U8 [256, 256], .weight_scale F8_E4M3 [256, 32], "
                         ".weight_scale_2 F32 []")
        self.assertIn("      tensors: .bias F32 [256], .weight U8 [256, 256], .weight_scale "
                      "F8_E4M3 [256, 32], .weight_scale_2 F32 []", lines)
        self.assertIn("      %s.bias all zero: dropped (the op computes no bias)" % ff, lines)
        self.assertIn("inspect: error: 1 of 2 layers refused", p.stderr)

    def test_convert(self):
        dst = os.path.join(self.dir, "out.safetensors")
        p = self.cli("convert", fixture("modelopt"), dst, "--layers", "attn")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^converted 1 modelopt layers of .*modelopt into .*out"
                         r"\.safetensors \(\d+ bytes; manifest .*out\.manifest\.json\)\n")
        self.assertIn("  calibration required (no input scale): none", p.stdout)
        self.assertIn("transformer_blocks.0.attn.to_out.0", p.stderr)  # progress
        self.assertEqual(list(checkpoints.load_converted(dst)),
                         ["transformer_blocks.0.attn.to_out.0"])
        p = self.cli("convert", fixture("modelopt"), dst)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("  calibration required (no input scale): transformer_blocks.0.ff.net.2",
                      p.stdout)
        with open(dst, "rb") as f, open(fixture("expected", "modelopt.safetensors"), "rb") as g:
            self.assertEqual(f.read(), g.read())

    def test_errors(self):
        shutil.copy(fixture("modelopt", "model.safetensors"), self.dir)
        dst = os.path.join(self.dir, "o.safetensors")
        p = self.cli("convert", os.path.join(self.dir, "model.safetensors"), dst)
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stderr, r"convert: error: .*ambiguous format .* candidates modelopt")
        self.assertFalse(os.path.exists(dst))
        p = self.cli("convert", os.path.join(self.dir, "model.safetensors"), dst, "--format",
                     "modelopt")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.cli("inspect", os.path.join(self.dir, "nope"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("inspect: error: %s: no such file or folder" % os.path.join(self.dir,
                                                                                  "nope"),
                      p.stderr)
        for args in (("convert", "a"), ("inspect",), ("inspect", "x", "--format", "gguf")):
            with self.subTest(args=args):
                p = self.cli(*args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("error:", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
