"""The torch CPU path: CPU tensors run the emulator through the same wrapper and op the GPU uses
(torch.library custom_op on torch >= 2.4, the plain implementation below it - Debian's torch
1.13 here), and the modules. Needs torch: ./bazelw installs Debian's python3-torch.
"""

import os
import subprocess
import sys
import textwrap
import threading
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
from minimax_h3_nvfp4 import _eager, _torch_op, hosttime, selftest  # noqa: E402
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


def calibration_rows(device):
    """(what, sample, exception, message regex): samples act_global_scale refuses, as torch
    tensors on `device` (the same table for the CPU here and CUDA in gpu_test)."""
    f = "act_global_scale: "
    nan = torch.tensor([[1.0, float("nan")], [2.0, 3.0]], dtype=torch.bfloat16, device=device)
    inf = torch.tensor([1.0, -float("inf"), float("inf")], device=device)
    return [
        ("NaN in bf16", nan, ValueError, r"^%ssample must be finite in float32, got 1 "
         r"non-finite of 4 values \(the first at index \[0, 1\]\)$" % f),
        ("inf in float32", inf, ValueError, r"^%ssample must be finite in float32, got 2 "
         r"non-finite of 3 values \(the first at index \[1\]\)$" % f),
        ("float64 beyond float32", torch.tensor([1.0, 1e39], dtype=torch.float64, device=device),
         ValueError, r"^%ssample must be finite in float32, got 1 non-finite of 2 values" % f),
        ("int64", torch.arange(4, device=device), TypeError, r"^%ssample must be of dtype "
         r"torch.bfloat16, torch.float16, torch.float32 or torch.float64, got torch.int64$" % f),
        ("empty", torch.zeros(0, 7168, dtype=torch.bfloat16, device=device), ValueError,
         r"^%ssample must have at least one value, got shape \[0, 7168\]$" % f),
        ("amax overflows the scale", torch.full((3,), 1e-38, device=device), ValueError,
         r"^%ssample's amax must be >= 2688 / FLT_MAX .*got amax 9\.99.*e-39$" % f),
    ]


class FunctionalTest(unittest.TestCase):

    def test_calibration_refuses_bad_samples(self):
        from minimax_h3_nvfp4 import calibration
        for what, sample, exc, pattern in calibration_rows("cpu"):
            with self.subTest(what):
                with self.assertRaisesRegex(exc, pattern):
                    calibration.act_global_scale(sample)
        # The module's calibration goes through the same check, and names a sample that is
        # not a tensor.
        w = torch.zeros(128, 256, dtype=torch.bfloat16)
        with self.assertRaisesRegex(ValueError, r"sample must be finite"):
            minimax_h3_nvfp4.NVFP4GatedResidualLinear(
                w, calibration_sample=torch.full((2, 256), float("nan")))
        with self.assertRaisesRegex(TypeError, r"^NVFP4GatedResidualLinear: calibration_sample "
                                    r"must be a torch.Tensor, got ndarray$"):
            minimax_h3_nvfp4.NVFP4GatedResidualLinear(w, calibration_sample=np.ones((2, 256)))
        mod = minimax_h3_nvfp4.MiniMaxH3NVFP4OutProj(w, act_global_scale=1.0)
        with self.assertRaisesRegex(TypeError, r"^MiniMaxH3NVFP4OutProj: sample must be a "
                                    r"torch.Tensor, got list$"):
            mod.calibrate([1.0])
        with self.assertRaisesRegex(ValueError, r"sample must have at least one value"):
            mod.calibrate(torch.zeros(0, 256))
        self.assertEqual(mod.act_global_scale.item(), 1.0)  # nothing changed by a refusal
        # The quantizer refuses a weight the op could not use (item 5), torch CPU as NumPy.
        for shape in ((128, 48), (128, 80)):
            with self.assertRaisesRegex(ValueError, r"^quantize_minimax_h3_o_weight_nvfp4: weight "
                                        r"must be \[N, K\] with N >= 1 and K a positive multiple "
                                        r"of 64, .*got shape \[128, %d\]$" % shape[1]):
                quantize_minimax_h3_o_weight_nvfp4(torch.zeros(shape, dtype=torch.bfloat16))

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
        # The table's operands (the GPU's workspace aside), the host values, the options.
        fn(args[0], args[1], args[2], w_gs, args[4], args[5], args[6], args[7], out, None, None,
           None, None, None, 0.0, 0, 0, 0)
        np.testing.assert_array_equal(bits(out), c["out"])


def same_bytes(a, b):
    """Byte-equal tensors (meta ones: same shape and dtype), or equal other values."""
    if not isinstance(a, torch.Tensor):
        return type(a) is type(b) and (not isinstance(a, np.ndarray) or np.array_equal(a, b))
    if a.device.type == "meta":
        return a.shape == b.shape and a.dtype == b.dtype
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def routes(fn):
    """fn()'s result and which route ran it: "fast" (_eager), "op" (the full route), or None
    (it raised before either ran)."""
    before = dict(_torch_op.stats)
    try:
        got = fn()
    finally:
        took = [k for k in ("fast", "op") if _torch_op.stats[k] != before[k]]
    assert len(took) <= 1, took
    return got, (took[0] if took else None)


def both_routes(args, **kw):
    """The op's result and error (type, message) on the fast path and on the full route, with
    fresh copies of every tensor argument for each; and the routes taken."""
    results = []
    for enabled in (True, False):
        a = [x.clone() if isinstance(x, torch.Tensor) else x for x in args]
        k = {n: (v.clone() if isinstance(v, torch.Tensor) else v) for n, v in kw.items()}
        if kw.get("out") is not None and kw["out"] is args[7]:
            k["out"] = a[7]  # in place stays in place
        saved = _eager.enabled
        _eager.enabled = enabled
        try:
            got, route = routes(lambda: minimax_h3_nvfp4_out_proj(*a, **k))
            res = ("ok", bits(got), {n: v for n, v in k.items() if isinstance(v, torch.Tensor)})
        except Exception as e:  # noqa: BLE001  (compared below, class and message)
            res, route = ("error", type(e), str(e)), "raised"
        finally:
            _eager.enabled = saved
        results.append((res, route, a, k))
    return results


class FastPathTest(unittest.TestCase):
    """The eager fast path (_eager.py): taken where nothing traces, same bits and same errors as
    the full route (the checks in diffusion_ops, then the op), nothing written on an error."""

    @classmethod
    def setUpClass(cls):
        cases = selftest.load_cases()
        cls.cases = {name: [t(cases[name][a]) for a in ARGS] for name in ("op_exact", "op_entropy")}
        cls.want = {name: cases[name]["out"] for name in cls.cases}

    def assert_same(self, args, expect_fast=True, **kw):
        (fast, fast_route, fa, fk), (full, full_route, ga, gk) = both_routes(args, **kw)
        self.assertEqual(full_route, "op" if full[0] == "ok" else "raised")
        if fast[0] == "ok":
            self.assertEqual(fast_route, "fast" if expect_fast else "op")
        self.assertEqual(fast[0], full[0], (fast, full))
        if fast[0] == "ok":
            np.testing.assert_array_equal(fast[1], full[1])
            for name in fast[2]:  # act_q, act_sf, out given
                self.assertTrue(same_bytes(fast[2][name], full[2][name]), name)
        else:
            self.assertIs(fast[1], full[1])
            self.assertEqual(fast[2], full[2])
            for a, g in zip(fa + list(fk.values()), ga + list(gk.values())):
                self.assertTrue(same_bytes(a, g), "written on an error")  # nothing written
        return fast

    def test_same_bits_both_routes(self):
        for name, args in self.cases.items():
            m, k = args[0].shape
            n = args[1].shape[0]
            table = [
                ("plain", args, {}),
                ("out given", args, {"out": torch.empty(m, n, dtype=torch.bfloat16)}),
                ("in place", args, {"out": args[7]}),
                ("workspaces", args, {"act_q": torch.zeros(m, k // 2, dtype=torch.uint8),
                                      "act_sf": torch.zeros(m, k // 16, dtype=torch.uint8)}),
                ("float w_gs", args[:3] + [float(args[3][0])] + args[4:], {}),
                ("act_q alone", args, {"act_q": torch.zeros(m, k // 2, dtype=torch.uint8)}),
                ("exact gemm", args, {"cpu_gemm": "exact"}),
                ("fewer rows", [x[:5] if x.dim() and x.shape[0] == m else x for x in args], {}),
            ]
            for label, a, kw in table:
                with self.subTest(case=name, what=label):
                    got = self.assert_same(a, **kw)
                    if label in ("plain", "out given", "in place", "workspaces", "float w_gs"):
                        np.testing.assert_array_equal(got[1], self.want[name])

    def test_full_route_where_it_must(self):
        args = self.cases["op_exact"]

        class Sub(torch.Tensor):
            pass

        grad_x = args[0].float().requires_grad_().bfloat16()  # requires grad (not a leaf)
        table = [
            ("tensor subclass", [args[0].as_subclass(Sub)] + args[1:]),
            ("requires grad", [grad_x] + args[1:]),
            ("numpy float32 scale", args[:3] + [np.float32(args[3][0])] + args[4:]),
        ]
        for label, a in table:
            with self.subTest(what=label):
                self.assert_same(a, expect_fast=False)
        with torch.no_grad():  # grad mode off: requires_grad does not matter
            self.assertEqual(routes(lambda: minimax_h3_nvfp4_out_proj(grad_x, *args[1:]))[1],
                             "fast")
        modes = []
        if hasattr(torch.overrides, "TorchFunctionMode"):
            class FunctionMode(torch.overrides.TorchFunctionMode):
                def __torch_function__(self, func, types, args=(), kwargs=None):
                    return func(*args, **(kwargs or {}))
            modes.append(FunctionMode)
        try:
            from torch.utils._python_dispatch import TorchDispatchMode

            class DispatchMode(TorchDispatchMode):
                def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                    return func(*args, **(kwargs or {}))
            modes.append(DispatchMode)
        except ImportError:
            pass
        for mode in modes:
            with self.subTest(mode=mode.__name__):
                with mode():
                    got, route = routes(lambda: minimax_h3_nvfp4_out_proj(*args))
                self.assertEqual(route, "op")
                np.testing.assert_array_equal(bits(got), self.want["op_exact"])
        fwd = getattr(torch.autograd, "forward_ad", None)
        if fwd is not None:
            with self.subTest(what="inside a forward-AD dual level"):
                with fwd.dual_level():
                    got, route = routes(lambda: minimax_h3_nvfp4_out_proj(*args))
                self.assertEqual(route, "op")
                np.testing.assert_array_equal(bits(got), self.want["op_exact"])
        with self.subTest(what="inside torch.jit.trace"):
            seen = []

            def traced(t):
                seen.append(_eager.plain_eager())
                return t + 1

            torch.jit.trace(traced, (torch.zeros(2),), check_trace=False)
            self.assertEqual(seen, [False])
            self.assertTrue(_eager.plain_eager())
        with self.subTest(what="an inference tensor as out, outside inference mode"):
            with torch.inference_mode():
                out = torch.empty_like(args[7])
            before = _torch_op.stats["fast"]
            try:
                minimax_h3_nvfp4_out_proj(*args, out=out)
            except RuntimeError:
                pass  # the full route's answer, whichever it is
            self.assertEqual(_torch_op.stats["fast"], before)
        with self.subTest(what="a sparse operand"):
            sparse = [args[0].to_sparse()] + args[1:]  # bf16, is_contiguous() True on 1.13
            before = _torch_op.stats["fast"]
            with self.assertRaises((TypeError, ValueError, RuntimeError)):
                minimax_h3_nvfp4_out_proj(*sparse)
            self.assertEqual(_torch_op.stats["fast"], before)

    def test_same_errors_both_routes(self):
        args = self.cases["op_exact"]
        m, k = args[0].shape
        n = args[1].shape[0]

        def rep(i, v):
            a = list(args)
            a[i] = v
            return a

        table = [
            ("attn_out dtype", rep(0, args[0].half()), {}),
            ("gate_index dtype", rep(6, args[6].long()), {}),
            ("w_gs dtype", rep(3, args[3].double()), {}),
            ("act_gs a float", rep(4, 1.0), {}),
            ("gate numpy", rep(5, bits(args[5])), {}),
            ("meta residual", rep(7, torch.empty(m, n, dtype=torch.bfloat16, device="meta")), {}),
            ("non-contiguous attn_out", rep(0, args[0].t().contiguous().t()), {}),
            ("residual shape", rep(7, args[7][:, :n - 1].contiguous()), {}),
            ("attn_out 1-D", rep(0, args[0].reshape(-1)), {}),
            ("attn_out 3-D", rep(0, args[0].reshape(1, m, k)), {}),
            ("gate 5-D", rep(5, args[5].reshape(1, 1, 1, *args[5].shape)), {}),
            ("w_gs negative float", rep(3, -1.0), {}),
            ("w_gs bool", rep(3, True), {}),
            ("out shape", args, {"out": torch.empty(m, n + 1, dtype=torch.bfloat16)}),
            ("out dtype", args, {"out": torch.empty(m, n, dtype=torch.float32)}),
            ("act_sf dtype", args, {"act_q": torch.zeros(m, k // 2, dtype=torch.uint8),
                                    "act_sf": torch.zeros(m, k // 16, dtype=torch.int8)}),
            ("tile name", args, {"tile": "nope"}),
            ("sm90_emulation", args, {"sm90_emulation": 1}),
            # Shapes whose message names where K came from (and asks about a transpose).
            ("attn_out K = 320", rep(0, torch.zeros(m, 320, dtype=torch.bfloat16)), {}),
            # A weight [N, K/2] of N = 64 given transposed, with the gate and residual of N = 64.
            ("o_weight_q transposed",
             [args[0], torch.zeros(k // 2, 64, dtype=torch.uint8)] + args[2:5]
             + [torch.zeros(9, 64, dtype=torch.bfloat16), args[6],
                torch.zeros(m, 64, dtype=torch.bfloat16)], {}),
        ] + [
            # A None for each required operand, with out given and without.
            ("%s None%s" % (ARGS[i], ", out given" if kw else ""), rep(i, None), kw)
            for i in range(1, 8)
            for kw in ({}, {"out": torch.empty(m, n, dtype=torch.bfloat16)})
        ]
        for label, a, kw in table:
            with self.subTest(what=label):
                got = self.assert_same(a, **kw)
                self.assertEqual(got[0], "error", label)

    def test_none_residual_is_a_type_error_on_every_route(self):
        # residual=None once took the fast path as "out is residual" (both None): out came from
        # torch.empty and was read as the residual, returning garbage. Every route raises the
        # documented TypeError, and try_call declines the call (None), writing nothing.
        args = self.cases["op_exact"]
        m, n = args[7].shape
        pattern = (r"^minimax_h3_nvfp4_out_proj: residual must be a torch.Tensor \(like "
                   r"attn_out\), got NoneType$")
        for fast in (True, False):
            for out in (None, torch.full((m, n), 3.0, dtype=torch.bfloat16)):
                with self.subTest(fast=fast, out_given=out is not None):
                    saved, _eager.enabled = _eager.enabled, fast
                    try:
                        with self.assertRaisesRegex(TypeError, pattern):
                            minimax_h3_nvfp4_out_proj(*args[:7], None, out=out)
                    finally:
                        _eager.enabled = saved
                    if out is not None:
                        self.assertTrue(bool((out == 3.0).all()), "out was written")
        for out in (None, torch.empty(m, n, dtype=torch.bfloat16)):
            self.assertIsNone(_eager.try_call((*args[:7], None, out, None, None, None, None,
                                               None), 0, 0, 0))
        # NumPy, the third route.
        c = selftest.load_cases()["op_exact"]
        with self.assertRaisesRegex(TypeError, r"residual must be a numpy.ndarray"):
            minimax_h3_nvfp4_out_proj(*[c[a] for a in ARGS[:7]], None)

    def test_each_operand_dtype_decides_the_route(self):
        # try_call's dtype table against its operand order: one operand of another dtype (or
        # of no tensor type where a float is allowed) and the call is the full route's (None).
        args = self.cases["op_exact"]
        m, k = args[0].shape
        n = args[1].shape[0]
        outs = {"out": torch.empty(m, n, dtype=torch.bfloat16),
                "act_q": torch.empty(m, k // 2, dtype=torch.uint8),
                "act_sf": torch.empty(m, k // 16, dtype=torch.uint8)}
        names = ["attn_out", "o_weight_q", "o_weight_sf", "o_weight_global_scale",
                 "act_global_scale", "gate", "gate_index", "residual", "out", "act_q", "act_sf"]

        def call(over):  # the table's other rows (the quality options) not given
            a = dict(zip(names, list(args) + [outs["out"], outs["act_q"], outs["act_sf"]]))
            a.update(over)
            return _eager.try_call(tuple(a.get(x) for x in _torch_op.OPERAND_NAMES), 0, 0, 0)

        self.assertIsNotNone(call({}))  # every operand as try_call takes it: the fast path
        for i, name in enumerate(names):
            with self.subTest(operand=name):
                t = (list(args) + [outs["out"], outs["act_q"], outs["act_sf"]])[i]
                wrong = torch.int16 if t.dtype != torch.int16 else torch.int32
                self.assertIsNone(call({name: t.to(wrong)}))

    def test_plans_follow_the_shapes(self):
        # One plan per shape: alternating M and in-place calls reuse the right struct.
        args = self.cases["op_entropy"]
        m = args[0].shape[0]
        for rows in (m, 3, m, 1, 3):
            a = [x[:rows].clone() if x.dim() and x.shape[0] == m else x for x in args]
            got, route = routes(lambda: minimax_h3_nvfp4_out_proj(*a))
            self.assertEqual(route, "fast")
            np.testing.assert_array_equal(bits(got), self.want["op_entropy"][:rows])

    def test_version_bump_takes_only_the_given_outputs(self):
        # torch 2.x's tuple form (absent from 1.13, so faked): every element a tensor, act_q or
        # act_sf alone included (the H200's torch 2.11 CPU run caught a None in the tuple).
        seen = []

        def fake(ts):
            self.assertTrue(all(isinstance(t, torch.Tensor) for t in ts), ts)
            seen.append(len(ts))
        out, q, sf = torch.zeros(2), torch.zeros(2), torch.zeros(2)
        names = _torch_op.OPERAND_NAMES
        with mock.patch.object(_eager, "_bump_tuple", fake), \
                mock.patch.object(_torch_op, "registered", True):
            for a, b in ((None, None), (q, None), (None, sf), (q, sf)):
                ops = [None] * len(names)  # out not given: the one allocated is bumped
                ops[names.index("act_q")], ops[names.index("act_sf")] = a, b
                _eager._bump_mutated(ops, out)
        self.assertEqual(seen, [1, 2, 2, 3])

    def test_version_counter_as_the_registered_op(self):
        if _eager._bump is None:
            self.skipTest("torch %s has no torch.autograd.graph.increment_version"
                          % torch.__version__)
        args = self.cases["op_exact"]
        out = torch.empty_like(args[7])
        with mock.patch.object(_torch_op, "registered", True):
            v = out._version
            minimax_h3_nvfp4_out_proj(*args, out=out)
            self.assertEqual(out._version, v + 1)

    def test_no_compiler_import_on_a_call(self):
        # A fresh process: importing the package and calling it on CPU tensors imports none
        # of the compiler stack (the fast path never enters torch's op dispatch).
        script = textwrap.dedent("""
            import json, sys
            import torch
            heavy = json.loads(sys.argv[1])
            before = [h for h in heavy if h in sys.modules]
            import minimax_h3_nvfp4
            from minimax_h3_nvfp4 import _torch_op, selftest
            c = selftest.load_cases()["op_exact"]
            def t(a):
                if a.dtype.name == "uint16":
                    return torch.from_numpy(a.view("int16").copy()).view(torch.bfloat16)
                return torch.from_numpy(a.copy())
            after_import = [h for h in heavy if h in sys.modules]
            minimax_h3_nvfp4.minimax_h3_nvfp4_out_proj(*[t(c[a]) for a in selftest.ARGS])
            after_call = [h for h in heavy if h in sys.modules]
            print(json.dumps([before, after_import, after_call, _torch_op.stats]))
        """)
        import json
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        r = subprocess.run([sys.executable, "-c", script, json.dumps(hosttime.HEAVY)],
                           capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        before, after_import, after_call, stats = json.loads(r.stdout.strip().splitlines()[-1])
        print("compiler modules: loaded by torch %s, by the import %s, by the call %s; routes %s"
              % (before, sorted(set(after_import) - set(before)),
                 sorted(set(after_call) - set(after_import)), stats))
        self.assertEqual(sorted(set(after_call) - set(after_import)), [])
        self.assertEqual(stats, {"fast": 1, "op": 0})


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

    def test_two_dimensional_operands_take_no_views(self):
        # 2-D operands reach the op as they are (the very tensors: no views), with the bits of
        # the leading-dimension route; a buffer replaced by a Parameter still reaches the op.
        mod = minimax_h3_nvfp4.NVFP4GatedResidualLinear(self.w, act_global_scale=3.0)
        x2, res2 = self.x.reshape(-1, self.k), self.res.reshape(-1, self.n)
        idx2 = self.idx.reshape(-1).to(torch.int32)
        want = bits_t(mod(self.x, self.res, self.gate, self.idx).reshape(-1, self.n))
        nan_out = torch.full_like(res2, float("nan"))
        in_place = res2.clone()
        table = [  # (label, residual, out, what out= the op must receive)
            ("new out", res2, None, None),
            ("out given", res2, nan_out, nan_out),
            ("in place", in_place, in_place, in_place),
        ]
        from minimax_h3_nvfp4 import modules
        for label, res, out, op_out in table:
            with self.subTest(what=label):
                with mock.patch.object(modules, "minimax_h3_nvfp4_out_proj",
                                       wraps=modules.minimax_h3_nvfp4_out_proj) as op:
                    got = mod(x2, res, self.gate, idx2, out=out)
                args, kwargs = op.call_args
                self.assertIs(args[0], x2)
                self.assertIs(args[6], idx2)
                self.assertIs(args[7], res)
                self.assertIs(kwargs["out"], op_out)
                if out is not None:
                    self.assertIs(got, out)
                self.assertTrue(torch.equal(bits_t(got), want))
        sf = mod.o_weight_sf
        del mod.o_weight_sf
        mod.o_weight_sf = torch.nn.Parameter(sf, requires_grad=False)
        self.assertNotIn("o_weight_sf", mod._buffers)
        self.assertTrue(torch.equal(bits_t(mod(x2, res2, self.gate, idx2)), want))

    def test_functional_call_sees_the_given_buffers(self):
        # torch.func / stateless functional_call: the given act_global_scale, not the module's
        # (torch 1.13 answers attributes from a swapped class, 2.x rewrites _buffers).
        stateless = getattr(torch.func, "functional_call", None) if hasattr(torch, "func") \
            else None
        if stateless is None:
            from torch.nn.utils import stateless as sl
            stateless = sl.functional_call
        mod = minimax_h3_nvfp4.NVFP4GatedResidualLinear(self.w, act_global_scale=3.0)
        other = minimax_h3_nvfp4.NVFP4GatedResidualLinear(self.w, act_global_scale=0.5)
        x2, res2 = self.x.reshape(-1, self.k), self.res.reshape(-1, self.n)
        for x, res in ((x2, res2), (self.x, self.res)):  # the 2-D route and the view route
            with self.subTest(dims=x.dim()):
                got = stateless(mod, {"act_global_scale": other.act_global_scale},
                                (x, res, self.gate, self.idx))
                want = other(x, res, self.gate, self.idx)
                self.assertTrue(torch.equal(bits_t(got), bits_t(want)))
                self.assertFalse(torch.equal(bits_t(got), bits_t(mod(x, res, self.gate,
                                                                     self.idx))))

    def test_module_operand_errors(self):
        # The module's own operands named: x / attn_out of the wrong width on either route,
        # an out of another shape or one that cannot be viewed as [M, N] (the op would write a
        # copy and the result would be lost).
        gen = minimax_h3_nvfp4.NVFP4GatedResidualLinear(self.w, act_global_scale=3.0)
        seed = minimax_h3_nvfp4.MiniMaxH3NVFP4OutProj(self.w, act_global_scale=3.0)
        x2, res2 = self.x.reshape(-1, self.k), self.res.reshape(-1, self.n)
        idx2 = self.idx.reshape(-1)
        wide = torch.zeros(6, 2 * self.k, dtype=torch.bfloat16)
        strided_out = torch.empty(3, 2, self.n, dtype=torch.bfloat16).transpose(0, 1)
        table = [  # (module, x, residual, out, message)
            (gen, wide, res2, None, r"^NVFP4GatedResidualLinear: x must have shape "
             r"\[\.\.\., in_features\] = \[\.\.\., 256\], got \[6, 512\]$"),
            (seed, wide, res2, None, r"^MiniMaxH3NVFP4OutProj: attn_out must have shape "
             r"\[\.\.\., in_features\] = \[\.\.\., 256\], got \[6, 512\]$"),
            (gen, wide.reshape(2, 3, -1), self.res, None, r"^NVFP4GatedResidualLinear: x must "
             r"have shape \[\.\.\., in_features\] = \[\.\.\., 256\], got \[2, 3, 512\]$"),
            (gen, self.x, self.res, torch.empty(6, self.n, dtype=torch.bfloat16),
             r"^NVFP4GatedResidualLinear: out must have residual's shape \[2, 3, 128\], got "
             r"\[6, 128\]$"),
            (gen, self.x, self.res, strided_out, r"^NVFP4GatedResidualLinear: out must be "
             r"contiguous \(viewable as \[M, N\]\), got shape \[2, 3, 128\] with strides "
             r"\[128, 256, 1\]$"),
            (gen, self.x, strided_out, strided_out, r"^NVFP4GatedResidualLinear: residual \(out, "
             r"in place\) must be contiguous"),
        ]
        for mod, x, res, out, message in table:
            with self.subTest(message=message[:60]):
                before = res.clone()
                with self.assertRaisesRegex(ValueError, message):
                    mod(x, res, self.gate, self.idx if x.dim() == 3 else idx2, out=out)
                self.assertTrue(torch.equal(bits_t(res), bits_t(before)))
        # A missing operand (None) or one of another type: a TypeError naming it, on the 2-D
        # and the N-D route alike (not an AttributeError from inside the module).
        operands = ["x", "residual", "gate", "gate_index", "out"]
        for mod in (gen, seed):
            for nd in (2, 3):
                for i, name in enumerate(operands):
                    for bad in (None, [1.0]):
                        if name == "out" and bad is None:
                            continue  # out=None is the default
                        with self.subTest(module=type(mod).__name__, nd=nd, operand=name,
                                          bad=type(bad).__name__):
                            ops = ([self.x, self.res, self.gate, self.idx, None] if nd == 3 else
                                   [x2, res2, self.gate, idx2, None])
                            ops[i] = bad
                            shown = mod._x_name if name == "x" else name
                            with self.assertRaisesRegex(
                                    TypeError, r"^%s: %s must be a torch.Tensor, got %s$"
                                    % (type(mod).__name__, shown, type(bad).__name__)):
                                mod(*ops[:4], out=ops[4])

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


class FakeGpu:
    """Stands in for h3_out_proj_gpu in WorkspaceCacheTest: records, per call, the struct's
    cached_workspace flag and its act_q and ready-flag addresses, and answers H3_CAPTURING
    where the fake stream captures and the flag is set, as capi.cc does."""

    def __init__(self, capturing=(), fail=()):
        self.capturing = set(capturing)  # fake stream handles being captured
        self.fail = set(fail)  # indices of the calls that fail (an internal error, code 13)
        self.calls = []
        self.zeroed = []  # each call's ready_flags_zeroed

    def __call__(self, ref, stream):
        plan = WorkspaceCacheTest.plan
        w = plan.words
        flag = plan.args.cached_workspace
        self.zeroed.append(plan.args.ready_flags_zeroed)
        self.calls.append((stream, flag, w[_eager._W_ACTQ], w[_eager._W_FLAGS]))
        if flag and stream in self.capturing:
            return 1000
        return 13 if len(self.calls) - 1 in self.fail else 0


class WorkspaceCacheTest(unittest.TestCase):
    """The GPU path's workspace cache (_eager._workspace, _eager._launch) with fakes: CPU
    tensors from torch's allocator, fake stream handles, a fake C call (FakeGpu)."""

    M, N, K = 3, 128, 256

    @classmethod
    def setUpClass(cls):
        m, n, k = cls.M, cls.N, cls.K
        shapes = ((m, k), (n, k // 2), (n, k // 16), (1,), (1,), (9, n), (m,), (m, n), None,
                  None, None)
        cls.plan = _eager._build(True, 0, shapes, 0, 0, 1, True)

    def setUp(self):
        _eager.release_workspaces()

    def launch(self, gpu, stream, act=None):
        with mock.patch.object(_eager, "_gpu", gpu), \
                mock.patch.object(_eager, "_raw_stream", lambda dev: stream):
            _eager._launch(self.plan, 0, torch.device("cpu"), act, act)
        return gpu.calls[-1]

    def test_one_workspace_per_stream(self):
        gpu = FakeGpu()
        # (stream, same workspace as the call of index, or None: a new one)
        table = [(11, None), (11, 0), (22, None), (11, 0), (22, 2)]
        got = []
        for stream, same_as in table:
            _, flag, actq, flags = self.launch(gpu, stream)
            self.assertEqual(flag, 1)
            self.assertEqual(flags - actq, self.plan.flags_off)
            if same_as is None:
                self.assertNotIn(actq, got)
            else:
                self.assertEqual(actq, got[same_as])
            got.append(actq)
        self.assertEqual(len(gpu.calls), len(table))  # one C call each

    def test_capture_gets_its_own_workspace(self):
        gpu = FakeGpu(capturing=(11,))
        _, _, cached, _ = self.launch(FakeGpu(), 11)  # the cache's entry, outside capture
        self.launch(gpu, 11)
        (s1, flag1, a1, _), (s2, flag2, a2, _) = gpu.calls
        self.assertEqual((s1, flag1, s2, flag2), (11, 1, 11, 0))  # refused, then called again
        self.assertEqual(a1, cached)
        self.assertNotEqual(a2, cached)
        self.assertEqual(self.launch(FakeGpu(), 11)[1:3], (1, cached))  # the entry is kept

    def test_first_call_under_capture_caches_nothing(self):
        gpu = FakeGpu(capturing=(11,))
        self.launch(gpu, 11)
        (_, flag1, a1, _), (_, flag2, a2, _) = gpu.calls
        self.assertEqual((flag1, flag2), (1, 0))
        self.assertEqual(a1, a2)  # allocated inside the capture: the call's own, not cached
        self.assertEqual(_eager._tls.ws, {})

    def test_large_workspaces_are_not_cached(self):
        with mock.patch.object(_eager, "WS_CACHE_MAX_BYTES", self.plan.ws_bytes - 1):
            gpu = FakeGpu(capturing=(11,))
            self.assertEqual(self.launch(gpu, 11)[1], 0)
            self.assertEqual(len(gpu.calls), 1)  # no cached workspace: no refusal
        self.assertEqual(_eager._tls.ws, {})

    def test_entries_are_bounded_per_thread(self):
        streams = list(range(100, 100 + _eager.WS_CACHE_MAX_ENTRIES + 2))
        for s in streams:
            self.launch(FakeGpu(), s)
        self.assertEqual([key[1] for key in _eager._tls.ws],
                         streams[-_eager.WS_CACHE_MAX_ENTRIES:])
        _eager.release_workspaces()
        self.assertEqual(_eager._tls.ws, {})

    def test_eviction_is_least_recently_used(self):
        first, *rest = range(200, 200 + _eager.WS_CACHE_MAX_ENTRIES)
        for s in [first] + rest:
            self.launch(FakeGpu(), s)
        kept = self.launch(FakeGpu(), first)[2]  # a hit: now the most recently used
        self.launch(FakeGpu(), 999)  # evicts rest[0], not `first`
        self.assertEqual([key[1] for key in _eager._tls.ws], rest[1:] + [first, 999])
        self.assertEqual(self.launch(FakeGpu(), first)[2], kept)

    def test_release_of_every_thread(self):
        ready, done, theirs = threading.Event(), threading.Event(), []

        def other():
            self.launch(FakeGpu(), 77)
            theirs.append(len(_eager._tls.ws))
            ready.set()
            done.wait(10)
            theirs.append(len(_eager._tls.ws))  # after the main thread released every thread's
        t = threading.Thread(target=other)
        t.start()
        self.assertTrue(ready.wait(10))
        self.launch(FakeGpu(), 11)
        _eager.release_workspaces(all_threads=True)
        self.assertEqual(dict(_eager._tls.ws), {})
        done.set()
        t.join(10)
        self.assertEqual(theirs, [1, 0])

    def test_threads_do_not_share(self):
        mine = self.launch(FakeGpu(), 11)[2]
        theirs = []

        def other():
            theirs.append(self.launch(FakeGpu(), 11)[2])
            theirs.append(self.launch(FakeGpu(), 11)[2])

        th = threading.Thread(target=other)
        th.start()
        th.join()
        self.assertEqual(theirs[0], theirs[1])
        self.assertNotEqual(theirs[0], mine)  # both alive when recorded
        self.assertEqual(self.launch(FakeGpu(), 11)[2], mine)

    def test_memset_skipped_where_the_flags_are_known_zero(self):
        # A call may skip the flags' memset (ready_flags_zeroed) where the last call on its cached
        # workspace succeeded with the same flag region: that kernel left it zero. (plan, stream,
        # the call fails, ready_flags_zeroed expected); "B" has another M, so another flag region.
        m, n, k = 200, self.N, self.K
        plan_b = _eager._build(True, 0, ((m, k), (n, k // 2), (n, k // 16), (1,), (1,), (9, n),
                                         (m,), (m, n), None, None, None), 0, 0, 1, True)
        self.assertNotEqual(plan_b.flags_off, self.plan.flags_off)
        table = [("A", 11, False, 0), ("A", 11, False, 1), ("A", 22, False, 0),
                 ("A", 11, True, 1), ("A", 11, False, 0), ("A", 11, False, 1),
                 ("B", 11, False, 0), ("B", 11, False, 1), ("A", 11, False, 0),
                 ("A", 11, False, 1)]
        gpu = FakeGpu(fail=[i for i, row in enumerate(table) if row[2]])
        for i, (which, stream, fails, want) in enumerate(table):
            with mock.patch.object(WorkspaceCacheTest, "plan",
                                   self.plan if which == "A" else plan_b):
                if fails:
                    with self.assertRaises(RuntimeError):
                        self.launch(gpu, stream)
                else:
                    self.launch(gpu, stream)
            self.assertEqual(gpu.zeroed[-1], want, "row %d %s" % (i, table[i]))
        # Under capture: the refused try and the call with the capture's own workspace, which
        # zeroes its flags; the cached entry keeps its state for the next eager call.
        cap = FakeGpu(capturing=(11,))
        self.launch(cap, 11)
        self.assertEqual(cap.zeroed, [1, 0])
        self.assertEqual(self.launch(FakeGpu(), 11)[1], 1)
        after = FakeGpu()
        self.launch(after, 11)
        self.assertEqual(after.zeroed, [1])
        _eager.release_workspaces()  # a new workspace: not known zero
        fresh = FakeGpu()
        self.launch(fresh, 11)
        self.assertEqual(fresh.zeroed, [0])

    def test_given_act_q_caches_the_flags_alone(self):
        m, k = self.M, self.K
        shapes = ((m, k), (self.N, k // 2), (self.N, k // 16), (1,), (1,), (9, self.N), (m,),
                  (m, self.N), None, (m, k // 2), (m, k // 16))
        plan = _eager._build(True, 0, shapes, 0, 0, 1, False)
        self.assertEqual((plan.flags_off, plan.sf_off), (0, 0))
        act = torch.zeros(m * k // 2, dtype=torch.uint8)
        with mock.patch.object(WorkspaceCacheTest, "plan", plan):
            _, flag, actq, flags = self.launch(FakeGpu(), 11, act=act)
        self.assertEqual((flag, actq), (1, act.data_ptr()))
        self.assertNotEqual(flags, act.data_ptr())


def bits_t(x):
    return x.contiguous().view(torch.int16)


if __name__ == "__main__":
    unittest.main(verbosity=2)
