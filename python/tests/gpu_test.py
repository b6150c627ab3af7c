"""GPU tests of the Python package minimax_h3_nvfp4 (torch + a CUDA device: sm_90 or SM12x).

    PYTHONPATH=DIR python3 python/tests/gpu_test.py [-k PATTERN]     (DIR: an installed package)

python/tests/run_gpu_tests.sh runs these with the CPU tests and the example. The reference is
the CPU path of the same package (the bit-exact emulator) and the contract's envelope of
admissible outputs (minimax_h3_nvfp4.testing, emulator/check.h through the C ABI):
  - exact data (every partial sum exact in f32): out, act_q, act_sf bit-identical to the emulator;
  - random data: act_q, act_sf bit-identical, out inside the contract's per-element bound;
then out=, in-place residual, act_q/act_sf, CUDA graph capture from the first call of a fresh
process (replay == eager, bit for bit), two streams at once, torch.compile(fullgraph=True), the
nn.Module, the weight quantizer of CUDA tensors (bit-identical to the CPU path, and its time at
[5376, 7168]), and every error path (incl. cpu-vs-cuda device mismatches). Both sm_90 emulations
run where the device is sm_90.
"""

import ctypes
import os
import subprocess
import sys
import textwrap
import unittest

import numpy as np
import torch

import minimax_h3_nvfp4
from minimax_h3_nvfp4 import _eager, _native, _torch_op, bf16, calibration, diffusion_ops, testing
from minimax_h3_nvfp4.diffusion_ops import (
    minimax_h3_nvfp4_out_proj, quantize_minimax_h3_o_weight_nvfp4)

OP = "minimax_h3_nvfp4_out_proj"
ARGS = ("attn_out", "o_weight_q", "o_weight_sf", "o_weight_global_scale", "act_global_scale",
        "gate", "gate_index", "residual")
HERE = os.path.dirname(os.path.abspath(__file__))
HAVE_CUDA = torch.cuda.is_available()
DEV = torch.device("cuda", 0)


def emulations():
    """The sm90_emulation values that mean something here (both on sm_90, one elsewhere)."""
    if HAVE_CUDA and torch.cuda.get_device_capability(0) == (9, 0):
        return ("faithful", "fast")
    return ("faithful",)


def testdata_dir():
    for d in (os.environ.get("H3_TESTDATA"), os.path.join(HERE, "..", "..", "testdata")):
        if d and os.path.exists(os.path.join(d, "op_exact_out.npy")):
            return d
    raise unittest.SkipTest("testdata/ not found (set H3_TESTDATA)")


def load_golden(case):
    d = testdata_dir()
    return {n: np.load(os.path.join(d, "%s_%s.npy" % (case, n)))
            for n in ARGS + ("out", "act_q", "act_sf")}


def to_torch(a, device=DEV):
    """NumPy -> torch on `device`; uint16 arrays are bf16 bit patterns."""
    a = np.ascontiguousarray(a)
    if a.dtype == np.uint16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).to(device)
    return torch.from_numpy(a).to(device)


def bits(t):
    """Host NumPy bit patterns of a tensor (bf16 -> uint16)."""
    return testing.to_numpy(t)


def np_args(case):
    return [case[n] for n in ARGS]


def gpu_args(np_list, device=DEV):
    return [to_torch(a, device) for a in np_list]


def exact_case(m, n=5376, k=7168, g=9, seed=0):
    """Exact data at the MiniMax-H3 shape: activations and weights are e2m1 grid values with a
    +-6 in every 16-block, act_gs = 1 (activation scales 1.0, codes exact), w_gs = 2688/6 = 448
    (weight scales 448). Then every product is a multiple of 2^4 and sum |p| <= K*36*448 < 2^28:
    every partial sum is exact in f32 (contract section 8), out is unique."""
    rng = np.random.default_rng(seed)
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], np.float32)

    def e2m1_blocks(rows, cols):
        v = grid[rng.integers(0, 8, (rows, cols))] * rng.choice(
            np.array([-1, 1], np.float32), (rows, cols))
        blocks = v.reshape(rows, cols // 16, 16)
        pos = rng.integers(0, 16, (rows, cols // 16))
        blocks[np.arange(rows)[:, None], np.arange(cols // 16)[None, :], pos] = 6.0 * rng.choice(
            np.array([-1, 1], np.float32), (rows, cols // 16))
        return blocks.reshape(rows, cols)

    attn_out = bf16.from_float32(e2m1_blocks(m, k))
    w = bf16.from_float32(e2m1_blocks(n, k))
    q, sf, gs = quantize_minimax_h3_o_weight_nvfp4(w)
    assert gs[0] == np.float32(448.0), gs
    gate = bf16.from_float32(rng.standard_normal((g, n), dtype=np.float32))
    gate_index = rng.integers(-2, g + 2, m).astype(np.int32)
    residual = bf16.from_float32(rng.standard_normal((m, n), dtype=np.float32))
    return [attn_out, q, sf, gs, np.ones(1, np.float32), gate, gate_index, residual]


def random_case(m, n=5376, k=7168, g=9, seed=1):
    """Gaussian activations with outlier channels (x40), a quantized Gaussian weight, a
    calibrated act_gs, gate indices including out-of-range ones."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k), dtype=np.float32)
    x[:, rng.choice(k, 16, replace=False)] *= 40.0
    attn_out = bf16.from_float32(x)
    w = bf16.from_float32(rng.standard_normal((n, k), dtype=np.float32) * 0.02)
    q, sf, gs = quantize_minimax_h3_o_weight_nvfp4(w)
    gate = bf16.from_float32(rng.standard_normal((g, n), dtype=np.float32))
    gate_index = rng.integers(-1, g + 1, m).astype(np.int32)
    residual = bf16.from_float32(rng.standard_normal((m, n), dtype=np.float32))
    return [attn_out, q, sf, gs, calibration.act_global_scale(attn_out), gate, gate_index,
            residual]


def cpu_reference(np_list, gemm="exact"):
    """The emulator's (out, act_q, act_sf) through the package's NumPy path."""
    m, k = np_list[0].shape
    act_q = np.empty((m, k // 2), np.uint8)
    act_sf = np.empty((m, k // 16), np.uint8)
    out = minimax_h3_nvfp4_out_proj(*np_list, act_q=act_q, act_sf=act_sf, cpu_gemm=gemm)
    return out, act_q, act_sf


def gpu_run(t_list, emulation="faithful", **kw):
    m, k = t_list[0].shape
    act_q = torch.empty((m, k // 2), dtype=torch.uint8, device=DEV)
    act_sf = torch.empty((m, k // 16), dtype=torch.uint8, device=DEV)
    out = minimax_h3_nvfp4_out_proj(*t_list, act_q=act_q, act_sf=act_sf,
                                    sm90_emulation=emulation, **kw)
    torch.cuda.synchronize()
    return bits(out), bits(act_q), bits(act_sf)


@unittest.skipUnless(HAVE_CUDA, "no CUDA device")
class GoldenTest(unittest.TestCase):
    """testdata/'s goldens (N = 128, K = 256 / 512: shapes the kernel takes)."""

    def test_op_exact(self):
        c = load_golden("op_exact")
        for emu in emulations():
            with self.subTest(emulation=emu):
                out, act_q, act_sf = gpu_run(gpu_args(np_args(c)), emu)
                np.testing.assert_array_equal(act_q, c["act_q"])
                np.testing.assert_array_equal(act_sf, c["act_sf"])
                np.testing.assert_array_equal(out, c["out"])

    def test_op_entropy(self):
        c = load_golden("op_entropy")
        lo, hi, _ = testing.out_envelope(*np_args(c))
        for emu in emulations():
            with self.subTest(emulation=emu):
                out, act_q, act_sf = gpu_run(gpu_args(np_args(c)), emu)
                np.testing.assert_array_equal(act_q, c["act_q"])
                np.testing.assert_array_equal(act_sf, c["act_sf"])
                bad, first = testing.check_out(out, lo, hi)
                self.assertEqual(bad, 0, first)


@unittest.skipUnless(HAVE_CUDA, "no CUDA device")
class H3ShapeTest(unittest.TestCase):
    """N = 5376, K = 7168, G = 9 against the CPU path of the same package."""

    def test_exact_data_bit_exact(self):
        for m in (1, 300):
            case = exact_case(m, seed=m)
            lo, hi, exact = testing.out_envelope(*case, rows=[0, m - 1])
            self.assertTrue(exact.all(), "the exact case does not hold: fix exact_case")
            want = cpu_reference(case)
            t = gpu_args(case)
            for emu in emulations():
                with self.subTest(m=m, emulation=emu):
                    got = gpu_run(t, emu)
                    for name, w, g in zip(("out", "act_q", "act_sf"), want, got):
                        np.testing.assert_array_equal(g, w, err_msg=name)

    def test_every_tile_computes_the_same_bits(self):
        # The SM120 kernel's configs differ in speed only: every accumulator takes its MMAs in
        # k order in each, so even random data gives the same bits (the fast sm_90 build has one
        # config and ignores `tile`).
        m = 300
        t = gpu_args(random_case(m))
        want = gpu_run(t)
        for tile in [t for t in _native.tiles() if t != "auto"]:
            with self.subTest(tile=tile):
                got = gpu_run(t, tile=tile)
                for name, w, g in zip(("out", "act_q", "act_sf"), want, got):
                    np.testing.assert_array_equal(g, w, err_msg=name)

    def test_random_data_within_bound(self):
        m = 1000
        case = random_case(m)
        want_out, want_q, want_sf = cpu_reference(case, gemm="fast")
        rows = [0, 1, 127, 128, 129, 500, 998, 999]
        lo, hi, _ = testing.out_envelope(*case, rows=rows)
        outside = (case[6] < 0) | (case[6] >= 9)
        t = gpu_args(case)
        for emu in emulations():
            with self.subTest(emulation=emu):
                out, act_q, act_sf = gpu_run(t, emu)
                np.testing.assert_array_equal(act_q, want_q)
                np.testing.assert_array_equal(act_sf, want_sf)
                bad, first = testing.check_out(out, lo, hi, rows=rows)
                self.assertEqual(bad, 0, first)
                np.testing.assert_array_equal(out[outside], case[7][outside])

    def test_torch_cpu_tensors_run_the_emulator(self):
        case = exact_case(37, seed=5)
        want = minimax_h3_nvfp4_out_proj(*case)
        got = minimax_h3_nvfp4_out_proj(*gpu_args(case, torch.device("cpu")))
        self.assertEqual(got.device.type, "cpu")
        np.testing.assert_array_equal(bits(got), want)

    def test_scale_as_float_or_tensor(self):
        case = exact_case(64, seed=6)
        t = gpu_args(case)
        a = bits(minimax_h3_nvfp4_out_proj(*t))
        t[3] = float(case[3][0])
        b = bits(minimax_h3_nvfp4_out_proj(*t))
        np.testing.assert_array_equal(a, b)


@unittest.skipUnless(HAVE_CUDA, "no CUDA device")
class BuffersTest(unittest.TestCase):

    def setUp(self):
        self.case = exact_case(200, seed=7)
        self.t = gpu_args(self.case)
        self.want = cpu_reference(self.case)

    def test_out_given(self):
        out = torch.full((200, 5376), 7.0, dtype=torch.bfloat16, device=DEV)
        got = minimax_h3_nvfp4_out_proj(*self.t, out=out)
        self.assertIs(got, out)
        np.testing.assert_array_equal(bits(out), self.want[0])

    def test_in_place_residual(self):
        for emu in emulations():
            with self.subTest(emulation=emu):
                t = list(self.t)
                t[7] = self.t[7].clone()
                got = minimax_h3_nvfp4_out_proj(*t, out=t[7], sm90_emulation=emu)
                self.assertIs(got, t[7])
                np.testing.assert_array_equal(bits(t[7]), self.want[0])

    def test_workspaces(self):
        act_q = torch.zeros((200, 3584), dtype=torch.uint8, device=DEV)
        act_sf = torch.zeros((200, 448), dtype=torch.uint8, device=DEV)
        minimax_h3_nvfp4_out_proj(*self.t, act_q=act_q, act_sf=act_sf)
        np.testing.assert_array_equal(bits(act_q), self.want[1])
        np.testing.assert_array_equal(bits(act_sf), self.want[2])
        if hasattr(torch, "float8_e4m3fn"):
            sf8 = torch.zeros((200, 448), dtype=torch.float8_e4m3fn, device=DEV)
            minimax_h3_nvfp4_out_proj(*self.t, act_q=act_q, act_sf=sf8)
            np.testing.assert_array_equal(bits(sf8), self.want[2])

    def test_m_zero(self):
        t = list(self.t)
        t[0], t[6], t[7] = t[0][:0], t[6][:0], t[7][:0]
        out = minimax_h3_nvfp4_out_proj(*t)
        self.assertEqual(tuple(out.shape), (0, 5376))


_GRAPH_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import torch
    sys.path.insert(0, sys.argv[1])
    import gpu_test as T
    from minimax_h3_nvfp4.diffusion_ops import minimax_h3_nvfp4_out_proj

    from minimax_h3_nvfp4 import _eager, _torch_op
    emu, route = sys.argv[2], sys.argv[3]
    _eager.enabled = route == "fast"
    a = T.gpu_args(T.exact_case(300, seed=11))
    b = T.gpu_args(T.exact_case(300, seed=12))
    static = [x.clone() for x in a]
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):   # the op's first call in this process
        out = minimax_h3_nvfp4_out_proj(*static, sm90_emulation=emu)
    want = {"fast": 1, "op": 0} if route == "fast" else {"fast": 0, "op": 1}
    assert {k: _torch_op.stats[k] for k in want} == want, _torch_op.stats
    g.replay()
    torch.cuda.synchronize()
    replay_a = T.bits(out).copy()
    eager_a = T.bits(minimax_h3_nvfp4_out_proj(*a, sm90_emulation=emu))
    assert (replay_a == eager_a).all(), "replay != eager"
    for s, x in zip(static, b):
        s.copy_(x)
    g.replay()
    g.replay()
    torch.cuda.synchronize()
    eager_b = T.bits(minimax_h3_nvfp4_out_proj(*b, sm90_emulation=emu))
    assert (T.bits(out) == eager_b).all(), "replay on new inputs != eager"
    assert not (eager_a == eager_b).all()
    print("GRAPH_OK")
""")


@unittest.skipUnless(HAVE_CUDA, "no CUDA device")
class GraphTest(unittest.TestCase):

    def test_capture_first_call_in_fresh_process(self):
        # Both routes: the eager fast path (no op registration involved) and torch's op.
        for emu, route in [(e, r) for e in emulations() for r in ("fast", "full")]:
            with self.subTest(emulation=emu, route=route):
                r = subprocess.run([sys.executable, "-c", _GRAPH_SCRIPT, HERE, emu, route],
                                   capture_output=True, text=True, timeout=600)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("GRAPH_OK", r.stdout)

    def test_capture_in_place_with_workspaces(self):
        case = exact_case(129, seed=13)
        t = gpu_args(case)
        want = cpu_reference(case)
        residual = t[7].clone()
        act_q = torch.empty((129, 3584), dtype=torch.uint8, device=DEV)
        act_sf = torch.empty((129, 448), dtype=torch.uint8, device=DEV)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            minimax_h3_nvfp4_out_proj(*t[:7], residual, out=residual, act_q=act_q,
                                      act_sf=act_sf)
        residual.copy_(t[7])
        g.replay()
        torch.cuda.synchronize()
        np.testing.assert_array_equal(bits(residual), want[0])
        np.testing.assert_array_equal(bits(act_q), want[1])
        np.testing.assert_array_equal(bits(act_sf), want[2])


@unittest.skipUnless(HAVE_CUDA, "no CUDA device")
class StreamsTest(unittest.TestCase):

    def test_two_streams_interleaved(self):
        cases = [exact_case(4096, seed=21), exact_case(4096, seed=22)]
        inputs = [gpu_args(c) for c in cases]
        want = [bits(minimax_h3_nvfp4_out_proj(*t)) for t in inputs]
        self.assertFalse((want[0] == want[1]).all())
        streams = [torch.cuda.Stream(), torch.cuda.Stream()]
        for s in streams:
            s.wait_stream(torch.cuda.current_stream())
        outs = [[], []]
        for _ in range(4):
            for i in (0, 1):
                with torch.cuda.stream(streams[i]):
                    outs[i].append(minimax_h3_nvfp4_out_proj(*inputs[i]))
        torch.cuda.synchronize()
        for i in (0, 1):
            for o in outs[i]:
                np.testing.assert_array_equal(bits(o), want[i])
        # The exact-data result is also the emulator's.
        np.testing.assert_array_equal(want[0][:64], cpu_reference(
            [x[:64] if x.ndim and x.shape[0] == 4096 else x for x in cases[0]])[0])


@unittest.skipUnless(HAVE_CUDA, "no CUDA device")
class CompileTest(unittest.TestCase):

    def check_backend(self, backend):
        case = exact_case(256, seed=31)
        t = gpu_args(case)
        q, sf, w_gs, act_gs = t[1], t[2], t[3], t[4]

        def block(attn_out, residual, gate, gate_index):
            h = minimax_h3_nvfp4_out_proj(attn_out, q, sf, w_gs, act_gs, gate, gate_index,
                                          residual)
            return h * 2  # something around the op, in the same graph

        torch._dynamo.reset()
        compiled = torch.compile(block, fullgraph=True, backend=backend)
        got = compiled(t[0], t[7], t[5], t[6])
        before = dict(_torch_op.stats)
        again = compiled(t[0], t[7], t[5], t[6])  # compiled: torch's op runs, not the fast path
        self.assertEqual((_torch_op.stats["op"] - before["op"],
                          _torch_op.stats["fast"] - before["fast"]), (1, 0))
        before = dict(_torch_op.stats)
        want = block(t[0], t[7], t[5], t[6])  # eager: the fast path
        self.assertEqual((_torch_op.stats["op"] - before["op"],
                          _torch_op.stats["fast"] - before["fast"]), (0, 1))
        np.testing.assert_array_equal(bits(got), bits(want))
        np.testing.assert_array_equal(bits(again), bits(want))

    def test_fullgraph_aot_eager(self):
        self.check_backend("aot_eager")

    def test_fullgraph_inductor(self):
        try:
            import triton  # noqa: F401
        except ImportError:
            self.skipTest("triton is not installed (inductor needs it)")
        self.check_backend("inductor")

    def test_first_call_compiled(self):
        # A fresh process whose first call of the op is compiled with fullgraph=True: nothing
        # before it read the library's tables, which torch.compile cannot trace (ctypes).
        code = "\n".join([
            "import torch, minimax_h3_nvfp4",
            "g = torch.Generator().manual_seed(5)",
            "w = (torch.randn(256, 512, generator=g) / 16).to(torch.bfloat16).cuda()",
            "x = torch.randn(64, 512, generator=g).to(torch.bfloat16).cuda()",
            "res = torch.randn(64, 256, generator=g).to(torch.bfloat16).cuda()",
            "gate = torch.randn(9, 256, generator=g).to(torch.bfloat16).cuda()",
            "idx = torch.randint(0, 9, (64,), generator=g, dtype=torch.int32).cuda()",
            "mod = minimax_h3_nvfp4.MiniMaxH3NVFP4OutProj(w, calibration_sample=x)",
            "got = torch.compile(mod, fullgraph=True, backend='aot_eager')(x, res, gate, idx)",
            "assert torch.equal(got.view(torch.int16), mod(x, res, gate, idx).view(torch.int16))",
        ])
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])

    def test_module_fullgraph(self):
        lin = torch.nn.Linear(7168, 5376, bias=False, dtype=torch.bfloat16, device=DEV)
        sample = torch.randn(64, 7168, dtype=torch.bfloat16, device=DEV)
        mod = minimax_h3_nvfp4.MiniMaxH3NVFP4OutProj.from_linear(lin, calibration_sample=sample)
        res = torch.randn(2, 32, 5376, dtype=torch.bfloat16, device=DEV)
        gate = torch.randn(9, 5376, dtype=torch.bfloat16, device=DEV)
        idx = torch.randint(0, 9, (2, 32), device=DEV, dtype=torch.int32)
        x = sample.reshape(2, 32, 7168)
        # Leading dimensions (views) and 2-D operands (passed as they are), each compiled.
        for xs, rs, ids in ((x, res, idx), (sample, res.reshape(64, 5376), idx.reshape(64))):
            with self.subTest(dims=xs.dim()):
                torch._dynamo.reset()
                got = torch.compile(mod, fullgraph=True, backend="aot_eager")(xs, rs, gate, ids)
                np.testing.assert_array_equal(bits(got), bits(mod(xs, rs, gate, ids)))


@unittest.skipUnless(HAVE_CUDA, "no CUDA device")
class ModuleTest(unittest.TestCase):

    def test_module_matches_functional_and_cpu(self):
        case = exact_case(96, seed=41)
        w = to_torch(bf16.from_float32(np.asarray(
            np.random.default_rng(41).standard_normal((5376, 7168)), np.float32) * 0.02))
        mod = minimax_h3_nvfp4.MiniMaxH3NVFP4OutProj(w, act_global_scale=1.0)
        self.assertEqual(set(dict(mod.named_buffers())),
                         {"o_weight_q", "o_weight_sf", "o_weight_global_scale",
                          "act_global_scale"})
        q, sf, gs = quantize_minimax_h3_o_weight_nvfp4(w)
        t = gpu_args(case)
        want = bits(minimax_h3_nvfp4_out_proj(t[0], q, sf, gs, t[4], t[5], t[6], t[7]))
        got = mod(t[0].reshape(4, 24, 7168), t[7].reshape(4, 24, 5376), t[5],
                  t[6].reshape(4, 24).long())
        self.assertEqual(tuple(got.shape), (4, 24, 5376))
        np.testing.assert_array_equal(bits(got).reshape(96, 5376), want)
        # The same module on the CPU (the emulator): bit-identical where the data is exact.
        case2 = exact_case(16, seed=42)
        cpu_mod = minimax_h3_nvfp4.MiniMaxH3NVFP4OutProj(
            to_torch(bf16.from_float32(np.ones((5376, 7168), np.float32)), "cpu"), 1.0)
        gpu_mod = minimax_h3_nvfp4.MiniMaxH3NVFP4OutProj(
            to_torch(bf16.from_float32(np.ones((5376, 7168), np.float32))), 1.0)
        tc, tg = gpu_args(case2, torch.device("cpu")), gpu_args(case2)
        np.testing.assert_array_equal(bits(cpu_mod(tc[0], tc[7], tc[5], tc[6])),
                                      bits(gpu_mod(tg[0], tg[7], tg[5], tg[6])))
        # A missing operand is the module's TypeError naming it, on CUDA as on the CPU.
        ops = [tg[0], tg[7], tg[5], tg[6]]
        for i, name in enumerate(("attn_out", "residual", "gate", "gate_index")):
            with self.subTest(missing=name), self.assertRaisesRegex(
                    TypeError, r"^MiniMaxH3NVFP4OutProj: %s must be a torch.Tensor, got "
                    r"NoneType$" % name):
                gpu_mod(*(ops[:i] + [None] + ops[i + 1:]))

    def test_module_with_options(self):
        # The quality options are the kernel's (contract sections 12, 13): a module built with
        # smoothing and / or the low-rank branch on CUDA runs them there; out lies in the
        # envelope of the op with those options (the emulator's checker), and the out= route
        # gives the same bits (the kernel is deterministic).
        g = torch.Generator().manual_seed(44)
        w = (torch.randn(256, 512, generator=g) / 16).to(torch.bfloat16)
        x = (torch.randn(64, 512, generator=g) * torch.exp(torch.randn(512, generator=g))
             ).to(torch.bfloat16)
        res = torch.randn(64, 256, generator=g).to(torch.bfloat16)
        gate = torch.randn(9, 256, generator=g).to(torch.bfloat16)
        idx = torch.randint(-1, 10, (64,), generator=g, dtype=torch.int32)
        for kw in ({"smooth_alpha": 0.5}, {"lowrank": 32}, {"lowrank": 16, "smooth_alpha": 0.5},
                   {"lowrank": 64}):
            with self.subTest(**kw):
                mod = minimax_h3_nvfp4.MiniMaxH3NVFP4OutProj(
                    w.to(DEV), calibration_sample=x.to(DEV), **kw)
                got = mod(x.to(DEV), res.to(DEV), gate.to(DEV), idx.to(DEV)).cpu()
                out = torch.full_like(res, float("nan")).to(DEV)
                mod(x.to(DEV), res.to(DEV), gate.to(DEV), idx.to(DEV), out=out)
                np.testing.assert_array_equal(bits(out), bits(got))
                opts = {n: getattr(mod, n, None) for n in ("act_smooth", "lora_down", "lora_up")}
                lo, hi, _ = testing.out_envelope(
                    x, mod.o_weight_q.cpu(), mod.o_weight_sf.cpu(),
                    mod.o_weight_global_scale.cpu(), mod.act_global_scale.cpu(), gate, idx, res,
                    **{n: None if t is None else t.cpu() for n, t in opts.items()})
                bad, first = testing.check_out(got, lo, hi)
                self.assertEqual(bad, 0, first)

    def test_calibration(self):
        x = torch.randn(128, 7168, dtype=torch.bfloat16, device=DEV)
        gs = calibration.act_global_scale(x)
        self.assertEqual(gs.device, x.device)
        want = calibration.act_global_scale(bits(x))
        np.testing.assert_array_equal(bits(gs).view(np.uint32), want.view(np.uint32))
        from torch_cpu_test import calibration_rows
        for what, sample, exc, pattern in calibration_rows(DEV):
            with self.subTest(what):
                with self.assertRaisesRegex(exc, pattern):
                    calibration.act_global_scale(sample)


def _weight_cases():
    """(name, [N, K] uint16 bf16 bits or float32) for the weight quantizer, GPU vs CPU."""
    rng = np.random.default_rng(19)

    def normal(n, k, scale=1.0):
        return bf16.from_float32((rng.standard_normal((n, k)) * scale).astype(np.float32))

    def finite_bits(n, k):
        b = rng.integers(0, 1 << 16, (n, k), dtype=np.uint32).astype(np.uint16)
        return np.where((b & 0x7F80) == 0x7F80, b & 0x807F, b).astype(np.uint16)

    sub = normal(256, 256)
    blocks = (np.arange(256)[:, None] + np.arange(256)[None, :] // 16) % 2 == 0
    sub[blocks] = rng.integers(0, 1 << 16, int(blocks.sum())).astype(np.uint16) & 0x807F
    big = normal(128, 128, 1e30)
    big[::3, ::5] = 0x7F7F  # the largest finite bf16, both signs
    big[1::3, 2::5] = 0xFF7F
    huge = normal(256, 192, 0.01)
    huge[:, 5::16] = bf16.from_float32(np.full((256, 12), 1e4, np.float32))
    f32_bits = rng.integers(0, 1 << 32, (129, 48), dtype=np.uint64).astype(np.uint32)
    f32_bits = np.where((f32_bits & 0x7F800000) == 0x7F800000, f32_bits & 0x807FFFFF, f32_bits)
    return [
        ("random normal", normal(5376, 7168, 0.02)),
        ("zeros", np.zeros((128, 64), np.uint16)),
        ("all equal", np.full((128, 256), 0x3F00, np.uint16)),
        ("subnormal blocks", sub),
        ("largest finite values", big),
        ("random finite bits", finite_bits(384, 320)),
        ("one huge value per block", huge),
        ("smallest legal shape", normal(1, 16)),
        ("non-square [3, 48]", normal(3, 48)),
        ("[129, 80]", normal(129, 80)),
        ("f32 normal", rng.standard_normal((128, 256)).astype(np.float32)),
        ("f32 random finite bits", f32_bits.view(np.float32)),
    ]


@unittest.skipUnless(HAVE_CUDA, "no CUDA device")
class WeightQuantizerTest(unittest.TestCase):
    """quantize_minimax_h3_o_weight_nvfp4 of a CUDA weight (the GPU quantizer) against the same
    weight on the CPU: q, sf and the global scale bit for bit; errors alike; its time."""

    def assert_same(self, name, w_cuda):
        # The contract's quantizer on any legal shape (the public function also refuses the
        # shapes the op cannot take: test_errors_as_on_the_cpu).
        q, sf, gs = diffusion_ops._quantize_weight(w_cuda, op_shapes=False)
        for t in (q, sf, gs):
            self.assertEqual(t.device, w_cuda.device, name)
        cq, csf, cgs = diffusion_ops._quantize_weight(w_cuda.cpu(), op_shapes=False)
        np.testing.assert_array_equal(q.cpu().numpy(), cq.numpy(), err_msg=name + ": codes")
        np.testing.assert_array_equal(sf.cpu().numpy(), csf.numpy(), err_msg=name + ": scales")
        self.assertEqual(gs.cpu().numpy().view(np.uint32).tolist(),
                         cgs.numpy().view(np.uint32).tolist(), name + ": global scale")
        print("weight quantizer %s %s %s: PASS" % (name, list(w_cuda.shape), w_cuda.dtype),
              file=sys.stderr)

    def test_bit_identical_to_cpu(self):
        for name, w in _weight_cases():
            with self.subTest(name):
                self.assert_same(name, to_torch(w))

    def test_views_and_streams(self):
        w = to_torch(bf16.from_float32(np.asarray(
            np.random.default_rng(5).standard_normal((256, 512)), np.float32)))
        self.assert_same("transposed view", w.t())
        self.assert_same("offset view", w.view(-1)[8:8 + 255 * 512].view(255, 512))
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            self.assert_same("side stream", w)

    def test_errors_as_on_the_cpu(self):
        w = np.full((4, 64), 0x3F80, np.uint16)
        w[1, 3] = 0x7FC1  # NaN
        for bad in (w, np.full((4, 64), 1e-38, np.float32)):
            msgs = []
            for t in (to_torch(bad), to_torch(bad, "cpu")):
                with self.assertRaises(ValueError) as cm:
                    diffusion_ops._quantize_weight(t, op_shapes=False)
                msgs.append(str(cm.exception))
            self.assertEqual(msgs[0], msgs[1])
        # A CUDA weight the GPU op could not take is refused before the GPU quantizer runs
        # (its result would stay on the GPU); a CPU copy of it goes to the emulator's rule.
        for shape in ((4, 40), (4, 48), (128, 64), (128, 192), (64, 256), (200, 256)):
            with self.subTest(shape=shape), self.assertRaisesRegex(
                    ValueError, r"^quantize_minimax_h3_o_weight_nvfp4: weight must be \[N, K\] "
                    r"with N a positive multiple of 128 and K of 256, as the GPU op takes it "
                    r"\(a CUDA weight; .*\), got shape \[%d, %d\]$" % shape):
                quantize_minimax_h3_o_weight_nvfp4(torch.zeros(*shape, device=DEV))
        quantize_minimax_h3_o_weight_nvfp4(torch.zeros(128, 64))  # the emulator takes it
        g = torch.cuda.CUDAGraph()
        w = torch.ones(128, 256, dtype=torch.bfloat16, device=DEV)
        with self.assertRaisesRegex(RuntimeError, r"stream must not be capturing"):
            with torch.cuda.graph(g):
                quantize_minimax_h3_o_weight_nvfp4(w)

    def test_time_at_minimax_h3_shape(self):
        import time
        w = torch.randn(5376, 7168, device=DEV).mul_(0.02).to(torch.bfloat16)
        times = []
        for i in range(13):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            quantize_minimax_h3_o_weight_nvfp4(w)
            torch.cuda.synchronize()
            if i >= 3:
                times.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        quantize_minimax_h3_o_weight_nvfp4(w.cpu())
        cpu_ms = (time.perf_counter() - t0) * 1e3
        times.sort()
        print("\nweight quantizer timing [5376, 7168] bf16 CUDA tensor: median %.3f ms (min %.3f, "
              "max %.3f, %d runs after 3 warm-up); CPU tensor path %.1f ms (one run)"
              % (times[len(times) // 2], times[0], times[-1], len(times), cpu_ms),
              file=sys.stderr)


def on_route(fast, fn, declined=False):
    """fn() with the eager fast path on or off; asserts the route that ran it. declined: a call
    the fast path hands to the full route (whose op then raises), so the op ran either way."""
    saved = _eager.enabled
    _eager.enabled = fast
    before = dict(_torch_op.stats)
    try:
        return fn()
    finally:
        _eager.enabled = saved
        ran = (_torch_op.stats["fast"] - before["fast"], _torch_op.stats["op"] - before["op"])
        allowed = ((0, 0), (0, 1) if declined or not fast else (1, 0))
        assert ran in allowed, (fast, declined, ran)


@unittest.skipUnless(HAVE_CUDA, "no CUDA device")
class FastPathTest(unittest.TestCase):
    """The eager fast path (_eager.py) against the full route (checks, then torch's op): the
    same bits, workspaces and errors, nothing written on an error."""

    def setUp(self):
        self.case = exact_case(300, seed=61)
        self.t = gpu_args(self.case)

    def test_same_bits(self):
        t = self.t
        m = 300
        variants = [
            ("plain", t, {}),
            ("out given", t, {"out": "new"}),
            ("in place", t, {"out": "residual"}),
            ("workspaces", t, {"act_q": "new", "act_sf": "new"}),
            ("float w_gs", t[:3] + [float(self.case[3][0])] + t[4:], {}),
            ("fewer rows", [x[:17] if x.dim() and x.shape[0] == m else x for x in t], {}),
        ]
        tiles = list(_native.tiles())
        for emu in emulations():
            for tile in tiles:
                for label, args, spec in variants:
                    with self.subTest(emulation=emu, tile=tile, what=label):
                        got = []
                        for fast in (True, False):
                            a = list(args)
                            a[7] = args[7].clone()
                            rows = a[0].shape[0]
                            kw = {"sm90_emulation": emu, "tile": tile}
                            if spec.get("out") == "new":
                                kw["out"] = torch.full((rows, 5376), 5.0, dtype=torch.bfloat16,
                                                       device=DEV)
                            elif spec.get("out") == "residual":
                                kw["out"] = a[7]
                            if "act_q" in spec:
                                kw["act_q"] = torch.zeros((rows, 3584), dtype=torch.uint8,
                                                          device=DEV)
                                kw["act_sf"] = torch.zeros((rows, 448), dtype=torch.uint8,
                                                           device=DEV)
                            out = on_route(fast, lambda: minimax_h3_nvfp4_out_proj(*a, **kw))
                            if "out" in kw:
                                self.assertIs(out, kw["out"])
                            torch.cuda.synchronize()
                            got.append([bits(out)] + [bits(kw[n]) for n in ("act_q", "act_sf")
                                                      if n in kw])
                        for f, s in zip(*got):
                            np.testing.assert_array_equal(f, s)

    def test_same_errors(self):
        t = self.t
        cpu_res = t[7].cpu()
        big = torch.zeros(300 * 7168 + 300 * 5376, dtype=torch.bfloat16, device=DEV)
        attn = big[:300 * 7168].view(300, 7168)
        attn.copy_(t[0])
        overlapping = big[300 * 7168 - 128:300 * 7168 - 128 + 300 * 5376].view(300, 5376)
        table = [
            ("dtype", [t[0].half()] + t[1:], {}),
            ("device", t[:7] + [cpu_res], {}),
            ("non-contiguous", [t[0].t().contiguous().t()] + t[1:], {}),
            ("shape (C ABI)", t[:7] + [t[7][:, :5375].contiguous()], {}),
            ("act_q alone (GPU)", t, {"act_q": torch.zeros((300, 3584), dtype=torch.uint8,
                                                           device=DEV)}),
            ("overlap (C ABI)", [attn] + t[1:], {"out": overlapping}),
            ("w_gs <= 0 (C ABI)", t[:3] + [-1.0] + t[4:], {}),
        ]
        for label, args, kw in table:
            with self.subTest(what=label):
                errs = []
                for fast in (True, False):
                    out = kw.get("out", torch.full((300, 5376), 3.0, dtype=torch.bfloat16,
                                                   device=DEV))
                    before = bits(out).copy()
                    k = dict(kw, out=out)
                    with self.assertRaises((TypeError, ValueError, RuntimeError)) as cm:
                        # _eager.try_call leaves act_q without act_sf to the C ABI's check,
                        # reached through the registered op.
                        on_route(fast, lambda: minimax_h3_nvfp4_out_proj(*args, **k),
                                 declined=label == "act_q alone (GPU)")
                    torch.cuda.synchronize()
                    np.testing.assert_array_equal(bits(out), before)
                    errs.append((type(cm.exception), str(cm.exception)))
                self.assertEqual(errs[0], errs[1])

    def test_missing_operands(self):
        # A None for a required operand is the full route's TypeError on both routes, with
        # out given or not: residual=None with out=None is two absent operands, not a call in
        # place (the fast path once read a fresh torch.empty out as the residual).
        t = self.t
        for i, name in enumerate(ARGS[:8]):
            if name == "attn_out":
                continue  # a None attn_out is the dispatcher's error (no tensor to route on)
            for with_out in (False, True):
                with self.subTest(operand=name, out_given=with_out):
                    args = t[:i] + [None] + t[i + 1:]
                    out = torch.full((300, 5376), 3.0, dtype=torch.bfloat16, device=DEV)
                    kw = {"out": out} if with_out else {}
                    errs = []
                    for fast in (True, False):
                        with self.assertRaises(TypeError) as cm:
                            on_route(fast, lambda: minimax_h3_nvfp4_out_proj(*args, **kw),
                                     declined=True)
                        errs.append(str(cm.exception))
                    torch.cuda.synchronize()
                    self.assertTrue(bool((out == 3.0).all()), "out was written")
                    self.assertEqual(errs[0], errs[1])
                    self.assertRegex(errs[0], r"^%s: %s must be a " % (OP, name))

    def test_flags_left_zero_and_memset_skipped(self):
        # Every kernel leaves its ready flags zero (ready_flags.h ResetAtExit), so eager calls
        # that repeat on a stream skip the flags' memset (ready_flags_zeroed): three calls of one M,
        # then three of another on one stream, no host sync; every result equal to its first
        # call's bits, the last plan's call made with ready_flags_zeroed, the flags read back zero.
        cases = [gpu_args(exact_case(m, n=512, k=1024, seed=70 + m)) for m in (300, 1)]
        want = [bits(minimax_h3_nvfp4_out_proj(*a)) for a in cases]
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        _eager.release_workspaces()
        _eager._tls.plans.clear()  # the plan looked up below: this loop's alone
        outs = []
        with torch.cuda.stream(s):
            for a in cases:
                for _ in range(3):
                    outs.append(on_route(True, lambda: minimax_h3_nvfp4_out_proj(*a)))
        s.synchronize()
        for i, o in enumerate(outs):
            np.testing.assert_array_equal(bits(o), want[i // 3], "call %d" % i)
        (entry,) = _eager._tls.ws.values()
        (plan,) = [p for p in _eager._tls.plans.values() if p.m == 1]
        self.assertTrue(plan.zeroed)
        self.assertEqual((entry.zero_off, entry.zero_bytes), (plan.flags_off, plan.flag_bytes))
        flags = entry.tensor[entry.zero_off:entry.zero_off + entry.zero_bytes]
        self.assertEqual(int(flags.count_nonzero()), 0)

    def test_branch_flags_left_zero(self):
        # The low-rank branch's kernels also leave their own words of the flag buffer zero (the
        # groups' arrival counters, the m-tiles' l-ready counts; ready_flags.h): three calls on a
        # stream, the later ones without the flags' memset, give the first call's bits (K = 1024:
        # four chunks, so every group's l is summed by its last arrival), the flags read back zero.
        a = gpu_args(exact_case(300, n=512, k=1024, seed=73))
        g = torch.Generator().manual_seed(74)
        kw = {"lora_down": (torch.randn(32, 1024, generator=g) / 32).to(torch.bfloat16).to(DEV),
              "lora_up": (torch.randn(512, 32, generator=g) / 8).to(torch.bfloat16).to(DEV)}
        want = bits(minimax_h3_nvfp4_out_proj(*a, **kw))
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        _eager.release_workspaces()
        _eager._tls.plans.clear()
        with torch.cuda.stream(s):
            outs = [on_route(True, lambda: minimax_h3_nvfp4_out_proj(*a, **kw)) for _ in range(3)]
        s.synchronize()
        for i, o in enumerate(outs):
            np.testing.assert_array_equal(bits(o), want, "call %d" % i)
        (entry,) = _eager._tls.ws.values()
        (plan,) = _eager._tls.plans.values()
        self.assertTrue(plan.zeroed)
        flags = entry.tensor[entry.zero_off:entry.zero_off + entry.zero_bytes]
        self.assertEqual(int(flags.count_nonzero()), 0)

    def test_cached_workspace_and_capture(self):
        # Eager calls on a side stream fill the fast path's workspace cache for it; a capture
        # on that same stream must take a workspace of its own (the C ABI refuses the cached
        # one under capture), and replays interleaved with eager calls on the stream, whose
        # cached workspace the graph never sees, all give the eager bits.
        a = self.t
        other = gpu_args(exact_case(300, seed=62))
        want = bits(minimax_h3_nvfp4_out_proj(*a))
        want_other = bits(minimax_h3_nvfp4_out_proj(*other))
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        _eager.release_workspaces()
        with torch.cuda.stream(s):
            for _ in range(2):
                on_route(True, lambda: minimax_h3_nvfp4_out_proj(*other))
        cached = dict(_eager._tls.ws)
        self.assertEqual(len(cached), 1)
        static = [x.clone() for x in a]
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            out = on_route(True, lambda: minimax_h3_nvfp4_out_proj(*static))
        self.assertEqual({k: v.base for k, v in _eager._tls.ws.items()},
                         {k: v.base for k, v in cached.items()})  # kept, unused by the capture
        with torch.cuda.stream(s):
            for _ in range(3):
                g.replay()
                eager = on_route(True, lambda: minimax_h3_nvfp4_out_proj(*other))
        s.synchronize()
        np.testing.assert_array_equal(bits(out), want)
        np.testing.assert_array_equal(bits(eager), want_other)


_TUNED_GRAPH_SCRIPT = textwrap.dedent("""
    import sys
    import torch
    sys.path.insert(0, sys.argv[1])
    import gpu_test as T
    import minimax_h3_nvfp4
    from minimax_h3_nvfp4 import _eager, _native, _torch_op, tuning
    from minimax_h3_nvfp4.diffusion_ops import minimax_h3_nvfp4_out_proj

    emu, route = sys.argv[2], sys.argv[3]
    m = 300
    results = minimax_h3_nvfp4.tune([m], 5376, 7168, 0, emu, 3, progress=lambda msg: None)
    winner = results[m][0]
    props = _native.device_properties(0)
    name, source = tuning.cache().choose(props, m, 5376, 7168, emu)
    assert (name, source) == (winner, "tuned"), (name, source, winner)
    _eager.enabled = route == "fast"
    a = T.gpu_args(T.exact_case(m, seed=71))
    static = [x.clone() for x in a]
    torch.cuda.synchronize()
    before = dict(_torch_op.stats)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):   # the first call after tune wrote the cache: tile="auto"
        out = minimax_h3_nvfp4_out_proj(*static, sm90_emulation=emu)
    resolved = _torch_op.stats["tile"]
    ran = "fast" if _torch_op.stats["fast"] > before["fast"] else "op"
    assert ran == ("fast" if route == "fast" else "op"), (ran, route)
    want_code = _native.tiles()[winner]
    print("tuned winner at M=%d: %s (code %d); the captured call resolved tile='auto' to code %d "
          "(route %s)" % (m, winner, want_code, resolved, ran))
    # The fast sm_90 build has one config: tune times only the first registered one.
    assert resolved == want_code, (resolved, want_code)
    g.replay()
    torch.cuda.synchronize()
    replay = T.bits(out).copy()
    eager = T.bits(minimax_h3_nvfp4_out_proj(*a, sm90_emulation=emu, tile=winner))
    assert (replay == eager).all(), "replay != eager with the winner"
    assert (T.bits(minimax_h3_nvfp4_out_proj(*a, sm90_emulation=emu)) == eager).all()
    print("TUNED_GRAPH_OK")
""")


@unittest.skipUnless(HAVE_CUDA, "no CUDA device")
class TunedCaptureTest(unittest.TestCase):
    """Issue 19 item 3: tune writes the cache, then a fresh process's first call after it,
    tile="auto" resolving to the tuned winner, is captured into a CUDA graph; replay == eager."""

    def test_capture_after_tune(self):
        import tempfile
        for emu, route in [(e, r) for e in emulations() for r in ("fast", "full")]:
            with self.subTest(emulation=emu, route=route), tempfile.TemporaryDirectory() as d:
                env = dict(os.environ, MINIMAX_H3_NVFP4_TUNE_CACHE=os.path.join(d, "tune.json"))
                r = subprocess.run([sys.executable, "-c", _TUNED_GRAPH_SCRIPT, HERE, emu, route],
                                   capture_output=True, text=True, timeout=600, env=env)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("TUNED_GRAPH_OK", r.stdout)
                print("\n" + r.stdout.splitlines()[0], file=sys.stderr)



@unittest.skipUnless(HAVE_CUDA, "no CUDA device")
class ErrorTest(unittest.TestCase):
    """Every bad input raises the right class in the C++ wording before anything is written."""

    def setUp(self):
        self.case = exact_case(64, seed=51)
        self.t = gpu_args(self.case)
        self.out = torch.full((64, 5376), 3.0, dtype=torch.bfloat16, device=DEV)

    def call(self, exc, pattern, replace=None, **kw):
        t = list(self.t)
        for name, v in (replace or {}).items():
            t[ARGS.index(name)] = v
        kw.setdefault("out", self.out)
        with self.assertRaisesRegex(exc, pattern) as cm:
            minimax_h3_nvfp4_out_proj(*t, **kw)
        torch.cuda.synchronize()
        self.assertTrue(bool((self.out == 3.0).all()), "out was written")
        return str(cm.exception)

    def test_type_errors(self):
        t = self.t
        self.call(TypeError, r"^%s: attn_out must be of dtype torch.bfloat16, got torch.float16$"
                  % OP, {"attn_out": t[0].half()})
        self.call(TypeError, r"gate_index must be of dtype torch.int32, got torch.int64",
                  {"gate_index": t[6].long()})
        self.call(TypeError, r"act_global_scale must be a torch.Tensor \(like attn_out\), got "
                  r"float", {"act_global_scale": 1.0})
        self.call(TypeError, r"gate must be a torch.Tensor \(like attn_out\), got numpy.ndarray",
                  {"gate": self.case[5]})
        self.call(TypeError, r"o_weight_global_scale must be of dtype torch.float32",
                  {"o_weight_global_scale": t[3].double()})

    def test_device_mismatch(self):
        t = self.t
        self.call(ValueError, r"^%s: residual must be on cuda:0 \(the device of attn_out\), got "
                  r"cpu$" % OP, {"residual": t[7].cpu()})
        self.call(ValueError, r"act_global_scale must be on cuda:0 \(the device of attn_out\), "
                  r"got cpu", {"act_global_scale": t[4].cpu()})
        self.call(ValueError, r"o_weight_q must be on cuda:0", {"o_weight_q": t[1].cpu()})
        self.call(ValueError, r"out must be on cuda:0", out=self.out.cpu())
        # CPU inputs with a CUDA tensor among them.
        c = [x.cpu() for x in t]
        with self.assertRaisesRegex(ValueError, r"gate must be on cpu \(the device of attn_out\),"
                                    r" got cuda:0"):
            minimax_h3_nvfp4_out_proj(*c[:5], t[5], *c[6:])

    def test_shapes_and_layout(self):
        t = self.t
        self.call(ValueError, r"^%s: k must be a positive multiple of 256, got 64 \(M = 64, "
                  r"K = 64 from attn_out \[M, K\], N = 5376 from o_weight_q \[N, K/2\], G = 9 "
                  r"from gate \[G, N\]\)$" % OP,
                  {"attn_out": t[0][:, :64].contiguous(), "o_weight_q": t[1][:, :32].contiguous(),
                   "o_weight_sf": t[2].reshape(-1)[:5376 * 4].contiguous()})
        self.call(ValueError, r"^%s: n must be a positive multiple of 128, got 64 \(M = 64, "
                  r"K = 7168 from attn_out \[M, K\], N = 64 from o_weight_q \[N, K/2\], G = 9 "
                  r"from gate \[G, N\]\)$" % OP,
                  {"o_weight_q": t[1][:64].contiguous(), "gate": t[5][:, :64].contiguous()})
        self.call(ValueError, r"residual must have shape \[M, N\] = \[64, 5376\] \(M = 64 from "
                  r"attn_out \[M, K\], N = 5376 from o_weight_q \[N, K/2\]\), got \[64, 5375\]",
                  {"residual": t[7][:, :5375].contiguous()})
        # attn_out with K = 7104 (the weight's is 7168): the GPU's K rule, naming attn_out.
        self.call(ValueError, r"^%s: k must be a positive multiple of 256, got 7104 \(M = 64, "
                  r"K = 7104 from attn_out" % OP, {"attn_out": t[0][:, :7104].contiguous()})
        # The MiniMax-H3 weight given transposed ([K/2, N] = [3584, 5376]).
        self.call(ValueError, r"^%s: o_weight_q must have shape \[N, K/2\] = \[3584, 3584\] "
                  r"\(K = 7168 from attn_out \[M, K\], N = 3584 from o_weight_q \[N, K/2\]; is "
                  r"it transposed\? o_weight_q is "
                  r"\[N, K/2\]\), got \[3584, 5376\]$" % OP,
                  {"o_weight_q": t[1].t().contiguous()})
        self.call(ValueError, r"attn_out must be contiguous \(dense, row-major\), got strides",
                  {"attn_out": t[0].t().contiguous().t()})
        buf = torch.zeros(64 * 7168 + 1, dtype=torch.bfloat16, device=DEV)
        mis = buf[1:].view(64, 7168)
        mis.copy_(t[0])
        self.call(ValueError, r"^%s: attn_out must be 16-byte aligned, got address" % OP,
                  {"attn_out": mis})

    def test_aliasing(self):
        t = self.t
        big = torch.zeros(64 * 7168 + 64 * 5376, dtype=torch.bfloat16, device=DEV)
        attn = big[:64 * 7168].view(64, 7168)
        attn.copy_(t[0])
        out = big[64 * 7168 - 128:64 * 7168 - 128 + 64 * 5376].view(64, 5376)
        with self.assertRaisesRegex(ValueError, r"^%s: out must not overlap attn_out, got "
                                    r"\[0x" % OP):
            minimax_h3_nvfp4_out_proj(attn, *t[1:], out=out)
        rbuf = torch.zeros(64 * 5376 + 256, dtype=torch.bfloat16, device=DEV)
        res = rbuf[:64 * 5376].view(64, 5376)
        res.copy_(t[7])
        with self.assertRaisesRegex(ValueError, r"out must not overlap residual \(only out == "
                                    r"residual exactly\)"):
            minimax_h3_nvfp4_out_proj(*t[:7], res, out=rbuf[256:].view(64, 5376))
        np.testing.assert_array_equal(bits(res), self.case[7])
        ws = torch.zeros(64 * 3584 + 64 * 448, dtype=torch.uint8, device=DEV)
        self.call(ValueError, r"act_q must not overlap act_sf",
                  act_q=ws[:64 * 3584].view(64, 3584),
                  act_sf=ws[64 * 3584 - 64:64 * 3584 - 64 + 64 * 448].view(64, 448))
        self.call(ValueError, r"act_q and act_sf must both be given or both be null",
                  act_q=torch.zeros((64, 3584), dtype=torch.uint8, device=DEV))

    def test_runtime_error_with_cuda_message(self):
        with self.assertRaisesRegex(RuntimeError, r"cudaSetDevice failed: cudaErrorInvalidDevice "
                                    r"\(invalid device ordinal\)"):
            minimax_h3_nvfp4.backend_name(device=99)
        # The op on a device ordinal that does not exist (through the C ABI: the Python wrapper
        # always passes the tensors' own device).
        a = _native.new_args()
        for name, x in zip(ARGS, self.t):
            setattr(a, name, _native.make_array(x.data_ptr(), tuple(x.shape)))
        a.out = _native.make_array(self.out.data_ptr(), tuple(self.out.shape))
        a.device = 99
        lib = _native.lib()
        code = lib.h3_out_proj_gpu(ctypes.byref(a), None)
        self.assertEqual(code, _native.INTERNAL)
        with self.assertRaisesRegex(RuntimeError, r"^%s: cudaSetDevice failed: "
                                    r"cudaErrorInvalidDevice" % OP):
            _native.check(code)
        torch.cuda.synchronize()
        self.assertTrue(bool((self.out == 3.0).all()))

    def test_backend_name(self):
        name = minimax_h3_nvfp4.backend_name()
        self.assertRegex(name, r"^sm_(90a validation|12\d\w* native)")
        print("\nbackend:", name, file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
