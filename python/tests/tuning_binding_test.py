"""tuning.py is a binding: its answers are the library's (kernels/tuning/tune_cache.h through
python/native/capi_tuning.h), on the CPU.

The heuristic, the cache's reader and writer are tested in C++ (kernels:tune_cache_test); here,
tables of what Python says against what they must be, and against the C++ reader and
heuristic run as a separate program (//harness:tune_cache_tool): the golden file written
through Python is the format's bytes, C++ reads back what Python's `tune` writer recorded and
the other way round, Python's choice equals C++'s for every device, shape and M of a table, the
warnings are the library's, the process's cache follows reset() and record(), and errors name
the argument.
"""

import ast
import ctypes
import os
import subprocess
import tempfile
import unittest
import warnings

import minimax_h3_nvfp4
from minimax_h3_nvfp4 import _native, tuning

H200 = {"name": "NVIDIA H200", "major": 9, "minor": 0, "sm_count": 132, "driver_version": 13000}
RTX5090 = {"name": "NVIDIA GeForce RTX 5090", "major": 12, "minor": 0, "sm_count": 170,
           "driver_version": 13000}
GB10 = {"name": "NVIDIA GB10", "major": 12, "minor": 1, "sm_count": 48, "driver_version": 13000}
DEFAULT = "128x128_staged"  # the registry's default (kernels/device/tiles.h kOutProjTileDefault)
MS = [0, 1, 2, 5, 11, 16, 40, 100, 127, 128, 129, 255, 256, 300, 511, 512, 513, 1000, 1024,
      2047, 2048, 2049, 3000, 4096, 8192, 16384, 75856, 2 ** 31 - 1]

# The records of testdata/tune_cache/python_written.json (kernels/tuning/tune_cache_test.cc writes the
# same ones in C++): device, N, K, emulation, winners, times.
GOLDEN_RECORDS = [
    (H200, 5376, 7168, "faithful",
     {1: "128x128", 128: "128x128", 1024: "128x128", 4096: "128x256_lockstep"},
     {1: 0.258, 128: 0.243, 1024: 0.564, 4096: 1.81}),
    (H200, 5376, 7168, "fast", {128: "128x256"}, {128: 0.2}),
    (RTX5090, 256, 512, "faithful", {1: "128x256", 16384: "128x256_lockstep"}, None),
]
# What the golden file makes "auto" run: (device, M, N, K, emulation, tile, why).
GOLDEN_CHOICES = [
    (H200, 1, 5376, 7168, "faithful", "128x128", "tuning cache winner"),
    (H200, 11, 5376, 7168, "faithful", "128x128", "tuning cache winner"),
    (H200, 2048, 5376, 7168, "faithful", "128x128", "tuning cache winner"),  # tie 1024 / 4096
    (H200, 2049, 5376, 7168, "faithful", "128x256_lockstep", "tuning cache winner"),
    (H200, 4096, 5376, 7168, "fast", "128x256", "tuning cache winner"),
    (H200, 4096, 5376, 4096, "faithful", DEFAULT, "heuristic: the default config"),
    (RTX5090, 128, 256, 512, "fast", "128x256", "tuning cache winner"),  # no emulation on SM12x
    (RTX5090, 129, 256, 512, "faithful", "128x256_lockstep", "tuning cache winner"),
    (RTX5090, 128, 5376, 7168, "faithful", DEFAULT, "heuristic: the default config"),
    (RTX5090, 4096, 5376, 7168, "faithful", DEFAULT, "heuristic: the default config"),
]
# The heuristic alone: (major, minor, M, tile, rule).
HEURISTIC = [
    (12, 0, 0, DEFAULT, "the default config"),  # SM12x: no small-M rule (target_facts.h)
    (12, 0, 512, DEFAULT, "the default config"),
    (12, 1, 128, DEFAULT, "the default config"),
    (12, 0, 513, DEFAULT, "the default config"),
    (9, 0, 1, DEFAULT, "the default config"),
    (10, 0, 128, DEFAULT, "the default config"),
    (13, 0, 128, DEFAULT, "the default config"),
]


def runfile(rel):
    base, ws = os.environ.get("TEST_SRCDIR"), os.environ.get("TEST_WORKSPACE")
    if base and ws:
        return os.path.join(base, ws, rel)
    return os.path.join(os.path.dirname(__file__), "..", "..", rel)


TOOL = runfile("harness/tune_cache_tool")
GOLDEN = runfile("testdata/tune_cache/python_written.json")


def device_arg(props):
    return "%(name)s|%(major)d|%(minor)d|%(sm_count)d|%(driver_version)d" % props


def variant(props, emulation):
    return emulation if props["major"] == 9 else "native"


def cpp_resolve(path, props, n, k, emulation, ms):
    """{m: (tile, "tuned" | "heuristic")} from the C++ reader in its own process."""
    r = subprocess.run([TOOL, "resolve", path, device_arg(props), variant(props, emulation),
                        str(n), str(k)] + [str(m) for m in ms],
                       capture_output=True, text=True, check=True)
    return {int(m): (tile, how) for m, tile, how in (l.split() for l in r.stdout.splitlines())}


def py_choose(path, props, n, k, emulation, ms):
    c = tuning.Cache(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {m: c.choose(props, m, n, k, emulation) for m in ms}


def record_golden(path):
    c = tuning.Cache(path)
    for props, n, k, emulation, winners, times in GOLDEN_RECORDS:
        c.record(props, n, k, emulation, winners, times)


class BindingTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "tune.json")

    def tearDown(self):
        tuning.reset()
        self.tmp.cleanup()

    def test_python_holds_no_cache_code(self):
        # What tuning.py imports: no JSON library, nothing that reads or writes files itself.
        with open(tuning.__file__) as f:
            tree = ast.parse(f.read())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module or "." for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        self.assertEqual(imported, {"ctypes", "math", "os", "warnings", "."})
        calls = {n.func.id for n in ast.walk(tree)
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        self.assertNotIn("open", calls)

    def test_heuristic_is_the_librarys(self):
        self.assertEqual(tuning.default_tile(), DEFAULT)  # named by the library, not its first
        for major, minor, m, tile, rule in HEURISTIC:
            props = dict(H200, major=major, minor=minor)
            with self.subTest(major=major, m=m):
                self.assertEqual(tuning.heuristic_with_reason(props, m), (tile, rule))
                self.assertEqual(tuning.heuristic(props, m), tile)
        for major in (7, 8, 9, 10, 11, 12, 13):
            r = subprocess.run([TOOL, "heuristic", str(major)] + [str(m) for m in MS],
                               capture_output=True, text=True, check=True)
            cpp = {int(m): t for m, t in (line.split() for line in r.stdout.splitlines())}
            py = {m: tuning.heuristic(dict(H200, major=major), m) for m in MS}
            self.assertEqual(py, cpp, major)

    def test_golden_written_through_python(self):
        record_golden(self.path)
        with open(self.path, "rb") as f, open(GOLDEN, "rb") as g:
            want = g.read().replace(b"0.1.0", minimax_h3_nvfp4.__version__.encode())
            self.assertEqual(f.read(), want)

    def test_golden_choices_and_entries(self):
        record_golden(self.path)
        c = tuning.Cache(self.path)
        for props, m, n, k, emulation, tile, why in GOLDEN_CHOICES:
            with self.subTest(name=props["name"], m=m, n=n, k=k, emulation=emulation):
                self.assertEqual(c.choose_with_reason(props, m, n, k, emulation), (tile, why))
        self.assertEqual(c.entries(), {
            tuning.device_key(H200): {
                "n=5376 k=7168 faithful": {1: "128x128", 128: "128x128", 1024: "128x128",
                                           4096: "128x256_lockstep"},
                "n=5376 k=7168 fast": {128: "128x256"}},
            tuning.device_key(RTX5090): {"n=256 k=512 native": {1: "128x256",
                                                                16384: "128x256_lockstep"}}})
        self.assertEqual(c.path, self.path)

    def test_python_writes_cpp_reads_and_back(self):
        c = tuning.Cache(self.path)
        c.record(H200, 5376, 7168, "faithful", {16: "128x256", 512: "128x128",
                                                16384: "128x256_lockstep"}, {16: 0.3})
        c.record(RTX5090, 5376, 7168, "faithful", {1: "128x256_lockstep"})
        subprocess.run([TOOL, "write", self.path, device_arg(H200), "fast", "5376", "7168",
                        "128:128x256"], check=True)
        cases = [(H200, "faithful", True), (H200, "fast", True), (RTX5090, "fast", True),
                 (GB10, "faithful", False)]
        for props, emulation, tuned in cases:
            with self.subTest(name=props["name"], emulation=emulation):
                cpp = cpp_resolve(self.path, props, 5376, 7168, emulation, MS)
                self.assertEqual(py_choose(self.path, props, 5376, 7168, emulation, MS), cpp)
                self.assertEqual({how for _, how in cpp.values()},
                                 {"tuned" if tuned else "heuristic"})
        got = py_choose(self.path, H200, 5376, 7168, "faithful", [1, 90, 91, 2896, 2897])
        self.assertEqual(got, {1: ("128x256", "tuned"), 90: ("128x256", "tuned"),
                               91: ("128x128", "tuned"), 2896: ("128x128", "tuned"),
                               2897: ("128x256_lockstep", "tuned")})

    def test_warnings_are_the_librarys(self):
        # (file text, the warning's words): nlohmann's words and C++'s, once per reading.
        key = tuning.device_key(H200)
        cases = [
            ("{not json", "is not a valid cache (invalid JSON at byte 2: syntax error while "
                          "parsing object key - invalid literal)"),
            ("\ufeff{}", "invalid JSON at byte 0: a UTF-8 byte order mark"),
            ('{"format": "minimax_h3_nvfp4 tune cache 1", "devices": {"%s": '
             '{"library_version": "0.0.1"}}}' % key.replace(minimax_h3_nvfp4.__version__, "0.0.1"),
             "holds entries of minimax_h3_nvfp4 0.0.1, not this version"),
            ('{"format": "minimax_h3_nvfp4 tune cache 1", "devices": {"%s": {"library_version": '
             '"%s", "shapes": {"n=5376 k=7168 faithful": {"buckets": [{"m": 1, "tile": '
             '"64x64"}]}}}}}' % (key, minimax_h3_nvfp4.__version__),
             'names tile "64x64", which this library does not have'),
        ]
        for text, words in cases:
            with self.subTest(words=words):
                with open(self.path, "w", encoding="utf-8") as f:
                    f.write(text)
                tuning.reset(self.path)
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    got = [tuning.cache().choose(H200, 1, 5376, 7168) for _ in range(2)]
                self.assertEqual(got, [(DEFAULT, "heuristic")] * 2)
                self.assertEqual(len(w), 1, [str(x.message) for x in w])
                self.assertIs(w[0].category, RuntimeWarning)
                self.assertIn(words, str(w[0].message))
                self.assertIn(self.path, str(w[0].message))

    def test_process_cache_follows_reset_and_record(self):
        tuning.reset(self.path)
        self.assertEqual(tuning.cache_path(), self.path)
        c = tuning.cache()
        self.assertEqual(c.choose(H200, 128, 5376, 7168), (DEFAULT, "heuristic"))
        before = tuning.generation
        # What resolve() keeps per shape: the generation it asked in, and the answer.
        tuning._memo[(7, 128, 5376, 7168, "faithful")] = (tuning.generation, 2)
        self.assertEqual(tuning.resolve(7, 128, 5376, 7168, "faithful"), 2)  # a dict lookup
        self.assertEqual(c.record(H200, 5376, 7168, "faithful", {128: "128x256"}), self.path)
        self.assertGreater(tuning.generation, before)
        self.assertEqual(tuning._memo, {})
        self.assertEqual(c.choose(H200, 128, 5376, 7168), ("128x256", "tuned"))
        other = os.path.join(self.tmp.name, "x" * 200, "y" * 1000 + ".json")  # > 1024 bytes
        tuning.reset(other)
        self.assertEqual(tuning.cache_path(), other)
        self.assertEqual(c.choose(H200, 128, 5376, 7168), (DEFAULT, "heuristic"))
        old = os.environ.get(tuning.ENV_PATH)
        os.environ[tuning.ENV_PATH] = self.path
        try:
            tuning.reset()
            self.assertEqual(tuning.cache_path(), self.path)
            self.assertEqual(c.choose(H200, 128, 5376, 7168), ("128x256", "tuned"))
        finally:
            if old is None:
                del os.environ[tuning.ENV_PATH]
            else:
                os.environ[tuning.ENV_PATH] = old

    def test_path_from_environment(self):
        old = {k: os.environ.get(k) for k in (tuning.ENV_PATH, "XDG_CACHE_HOME", "HOME")}
        try:
            # (variables set, the file): os.environ reaches the library's getenv.
            for env, want in [
                    ({tuning.ENV_PATH: "/x/y.json", "XDG_CACHE_HOME": "/xdg"}, "/x/y.json"),
                    ({tuning.ENV_PATH: "", "XDG_CACHE_HOME": "/xdg"},
                     "/xdg/minimax_h3_nvfp4/tune.json"),
                    ({tuning.ENV_PATH: None, "XDG_CACHE_HOME": None, "HOME": "/home/u"},
                     "/home/u/.cache/minimax_h3_nvfp4/tune.json")]:
                for k, v in env.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
                with self.subTest(env=env):
                    self.assertEqual(tuning.cache_path(), want)
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_resolve_asks_the_library(self):
        tuning.reset(self.path)
        tuning.cache().record(H200, 5376, 7168, "faithful", {128: "128x256"})
        count, _ = _native.device_count()
        if count == 0:
            with self.assertRaisesRegex(RuntimeError, r"^h3_tune_resolve: h3_device_properties"):
                tuning.resolve(0, 128, 5376, 7168, "faithful")
            self.assertEqual(tuning._memo, {})
            return
        props = _native.device_properties(0)
        for m in MS:
            for emulation in ("faithful", "fast"):
                code = tuning.resolve(0, m, 5376, 7168, emulation)
                name, _ = tuning.cache().choose(props, m, 5376, 7168, emulation)
                self.assertEqual(code, _native.tiles()[name])
                self.assertNotEqual(code, 0)

    def test_resolve_keeps_no_answer_across_a_reset(self):
        # The library call stands in for h3_tune_resolve, which runs without the GIL: a reset()
        # by another thread during it (the first case) makes its answer one of the old cache,
        # which the next call must not use; without a reset the next call is a dict lookup.
        tuning.reset(self.path)
        real = tuning._text
        for reset_during, asks_again in [(True, 2), (False, 1)]:
            asked = []

            def fake(fn, *args, reset_during=reset_during):
                if reset_during and not asked:
                    tuning.reset(self.path)
                asked.append(1)
                args[-2]._obj.value = 3  # the tile code the library answered
                return ""
            tuning._memo.clear()
            tuning._text = fake
            try:
                with self.subTest(reset_during=reset_during):
                    self.assertEqual(tuning.resolve(0, 64, 256, 512, "faithful"), 3)
                    self.assertEqual(tuning.resolve(0, 64, 256, 512, "faithful"), 3)
                    self.assertEqual(len(asked), asks_again)
            finally:
                tuning._text = real
        tuning._memo.clear()

    def test_errors_name_the_argument(self):
        c = tuning.Cache(self.path)
        cases = [
            (lambda: c.choose(H200, 1, 5376, 7168, "bogus"), ValueError,
             "sm90_emulation must be one of faithful, fast, got 'bogus'"),
            (lambda: c.choose(H200, -1, 5376, 7168), ValueError,
             "h3_tune_choose: m must be >= 0, got -1"),
            (lambda: c.record(H200, 5376, 7168, "faithful", {1: "64x64"}), ValueError,
             'a tuned bucket must have m in [1, 2147483647] and a registered tile (auto, '
             '128x256_lockstep, 128x256, 128x128, 128x128_staged), got m=1 tile="64x64"'),
            (lambda: c.record(H200, 5376, 7168, "faithful", {0: "128x128"}), ValueError,
             "got m=0 tile=\"128x128\""),
            (lambda: c.record(H200, 5376, 7168, "faithful", {}), ValueError,
             "h3_tune_record: count must be >= 1 (a winner to record), got 0"),
            (lambda: tuning.resolve(0, 1, 5376, 7168, "exact"), ValueError,
             "sm90_emulation must be one of faithful, fast, got 'exact'"),
        ]
        for fn, error, words in cases:
            with self.subTest(words=words):
                with self.assertRaises(error) as e:
                    fn()
                self.assertIn(words, str(e.exception))
        self.assertFalse(os.path.exists(self.path))  # nothing was written
        tuning.reset(self.path)
        lib = tuning._bound()
        needed = ctypes.c_int64(0)
        small = ctypes.create_string_buffer(4)
        self.assertEqual(lib.h3_tune_cache_path(None, small, 4, ctypes.byref(needed)),
                         _native.OUT_OF_RANGE)
        self.assertEqual(needed.value, len(os.fsencode(tuning.cache_path())) + 1)
        self.assertEqual(small.value, b"")


if __name__ == "__main__":
    unittest.main(verbosity=2)
