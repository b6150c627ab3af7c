"""One tuning cache, two languages: Python's tuning.py against the C++ reader and writer
(kernels/tune_cache.h, through //harness:tune_cache_tool), on the CPU.

C++ writes, Python reads the same winners, and the other way round; the golden file that
kernels:tune_cache_test reproduces byte for byte is what Python's writer makes; a table of corrupt,
truncated and foreign files is ignored by both, each with a warning; the built-in heuristic
gives the same answers in both.
"""

import json
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
MS = [1, 2, 5, 11, 16, 40, 100, 127, 128, 129, 255, 256, 300, 511, 512, 513, 1000, 1024, 2047,
      2048, 2049, 3000, 4096, 8192, 16384, 75856, 2 ** 31 - 1]

# The records of testdata/tune_cache/python_written.json, in order (kernels/tune_cache_test.cc
# writes the same ones in C++).
GOLDEN_VERSION = "0.1.0"
GOLDEN_RECORDS = [
    (H200, 5376, 7168, "faithful",
     {1: "128x128", 128: "128x128", 1024: "128x128", 4096: "128x256_lockstep"},
     {1: 0.258, 128: 0.243, 1024: 0.564, 4096: 1.81}),
    (H200, 5376, 7168, "fast", {128: "128x256"}, {128: 0.2}),
    (RTX5090, 256, 512, "native", {1: "128x256", 16384: "128x256_lockstep"}, None),
]


def runfile(rel):
    base = os.environ.get("TEST_SRCDIR")
    ws = os.environ.get("TEST_WORKSPACE")
    if base and ws:
        return os.path.join(base, ws, rel)
    return os.path.join(os.path.dirname(__file__), "..", "..", rel)


TOOL = runfile("harness/tune_cache_tool")


def device_arg(props):
    return "%s|%d|%d|%d|%d" % (props["name"], props["major"], props["minor"], props["sm_count"],
                               props["driver_version"])


def variant_of(props, sm90_emulation):
    return tuning.variant(props, sm90_emulation)


def cpp_resolve(path, props, n, k, variant, ms):
    """{m: (tile, "tuned"|"heuristic")} and the warnings, from the C++ reader."""
    r = subprocess.run([TOOL, "resolve", path, device_arg(props), variant, str(n), str(k)]
                       + [str(m) for m in ms], capture_output=True, text=True, check=True)
    got = {}
    for line in r.stdout.splitlines():
        m, tile, how = line.split()
        got[int(m)] = (tile, how)
    warns = [w for w in r.stderr.splitlines() if w.startswith("warning: ")]
    return got, warns


def py_resolve(path, props, n, k, sm90_emulation, ms):
    c = tuning.Cache(path)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = {}
        for m in ms:
            name, how = c.choose(props, m, n, k, sm90_emulation)
            got[m] = (tuning.concrete(name), how)
    return got, [str(x.message) for x in w]


class CrossTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "tune.json")

    def tearDown(self):
        self.tmp.cleanup()

    def assert_agree(self, props, n, k, sm90_emulation, expect_tuned=None):
        variant = variant_of(props, sm90_emulation)
        cpp, cpp_warns = cpp_resolve(self.path, props, n, k, variant, MS)
        py, py_warns = py_resolve(self.path, props, n, k, sm90_emulation, MS)
        self.assertEqual(cpp, py, (props["name"], n, k, sm90_emulation))
        self.assertEqual(bool(cpp_warns), bool(py_warns), (cpp_warns, py_warns))
        if expect_tuned is not None:
            self.assertEqual({how for _, how in cpp.values()},
                             {"tuned" if expect_tuned else "heuristic"})
        return cpp

    def test_golden_is_what_python_writes(self):
        old = tuning._library_version
        tuning._library_version = lambda: GOLDEN_VERSION
        try:
            c = tuning.Cache(self.path)
            for props, n, k, emu, winners, timings in GOLDEN_RECORDS:
                c.record(props, n, k, emu, winners, timings)
        finally:
            tuning._library_version = old
        with open(self.path, "rb") as f, \
                open(runfile("testdata/tune_cache/python_written.json"), "rb") as g:
            self.assertEqual(f.read(), g.read())

    def test_cpp_writes_python_reads(self):
        subprocess.run([TOOL, "write", self.path, device_arg(H200), "faithful", "5376", "7168",
                        "1:128x128:0.258", "128:128x128:0.243", "1024:128x128",
                        "4096:128x256_lockstep:1.81"], check=True)
        subprocess.run([TOOL, "write", self.path, device_arg(RTX5090), "native", "256", "512",
                        "16:128x256", "16384:128x256_lockstep"], check=True)
        got = self.assert_agree(H200, 5376, 7168, "faithful", expect_tuned=True)
        self.assertEqual(got[1], ("128x128", "tuned"))
        self.assertEqual(got[2048], ("128x128", "tuned"))  # the tie goes to the smaller bucket
        self.assertEqual(got[2049], ("128x256_lockstep", "tuned"))
        self.assert_agree(RTX5090, 256, 512, "faithful", expect_tuned=True)
        self.assert_agree(H200, 5376, 7168, "fast", expect_tuned=False)  # not tuned: heuristic
        self.assert_agree(RTX5090, 5376, 7168, "faithful", expect_tuned=False)
        with open(self.path) as f:
            doc = json.load(f)
        rows = doc["devices"][tuning.device_key(H200)]["shapes"]["n=5376 k=7168 faithful"]
        self.assertEqual(rows["buckets"][0], {"m": 1, "tile": "128x128", "median_ms": 0.258})
        self.assertEqual(rows["buckets"][2], {"m": 1024, "tile": "128x128"})

    def test_python_writes_cpp_reads(self):
        c = tuning.Cache(self.path)
        c.record(H200, 5376, 7168, "faithful", {16: "128x256", 512: "128x128",
                                                16384: "128x256_lockstep"}, {16: 0.3})
        c.record(H200, 5376, 7168, "fast", {128: "128x256"})
        c.record(RTX5090, 5376, 7168, "faithful", {1: "128x256_lockstep"})
        got = self.assert_agree(H200, 5376, 7168, "faithful", expect_tuned=True)
        self.assertEqual(got[1], ("128x256", "tuned"))
        self.assertEqual(got[513], ("128x128", "tuned"))
        self.assertEqual(got[75856], ("128x256_lockstep", "tuned"))
        self.assert_agree(H200, 5376, 7168, "fast", expect_tuned=True)
        self.assert_agree(RTX5090, 5376, 7168, "fast", expect_tuned=True)
        # And C++ adding a shape keeps Python's entries.
        subprocess.run([TOOL, "write", self.path, device_arg(H200), "faithful", "256", "512",
                        "1:128x128"], check=True)
        self.assert_agree(H200, 5376, 7168, "faithful", expect_tuned=True)
        self.assert_agree(H200, 256, 512, "faithful", expect_tuned=True)

    def test_corrupt_and_foreign_files_agree(self):
        with open(runfile("testdata/tune_cache/python_written.json")) as f:
            good = f.read().replace(GOLDEN_VERSION, minimax_h3_nvfp4.__version__)
        key = tuning.device_key(H200)
        ver = minimax_h3_nvfp4.__version__

        def doc(devices):
            return json.dumps({"format": tuning.FORMAT, "devices": devices})

        def rows(buckets):
            return doc({key: {"library_version": ver,
                              "shapes": {"n=5376 k=7168 faithful": {"buckets": buckets}}}})

        # (what, text, warns): every one falls back to the heuristic in both languages; warns is
        # True (both devices are warned about), False, or "rtx" (the cache knows the H200 only,
        # so the RTX 5090, which it does not know, is warned about).
        cases = [
            ("empty", "", True),
            ("truncated", good[:len(good) // 2], True),
            ("truncated by one byte", good[:-2], True),
            ("binary", "\x7fELF\x02\x01\x01", True),
            ("a list", "[1, 2]", True),
            ("other format", json.dumps({"format": "minimax_h3_nvfp4 tune cache 2",
                                         "devices": {}}), True),
            ("no devices", json.dumps({"format": tuning.FORMAT}), True),
            ("devices a list", json.dumps({"format": tuning.FORMAT, "devices": []}), True),
            ("device a list", doc({key: []}), True),
            ("version a number", doc({key: {"library_version": 1, "shapes": {}}}), True),
            ("shapes a list", doc({key: {"library_version": ver, "shapes": []}}), True),
            ("buckets an object", rows({}), True),
            ("buckets a string", rows("128"), True),
            ("m a string", rows([{"m": "128", "tile": "128x128"}]), True),
            ("m a float", rows([{"m": 128.0, "tile": "128x128"}]), True),
            ("m a bool", rows([{"m": True, "tile": "128x128"}]), True),
            ("m zero", rows([{"m": 0, "tile": "128x128"}]), True),
            ("m past 2^31 - 1", rows([{"m": 2 ** 31, "tile": "128x128"}]), True),
            ("m huge", rows([{"m": 10 ** 30, "tile": "128x128"}]), True),
            ("tile missing", rows([{"m": 1}]), True),
            ("tile a number", rows([{"m": 1, "tile": 2}]), True),
            ("row a list", rows([[1, "128x128"]]), True),
            ("unknown tile", rows([{"m": 1, "tile": "64x64"}]), True),
            ("other version", doc({key.replace(ver, "0.0.9"): {"library_version": "0.0.9"}}),
             True),
            ("other device", doc({key.replace("H200", "H100"): {"library_version": ver,
                                                                "shapes": {}}}), True),
            ("a BOM", "\ufeff" + good, True),
            ("nested", "[" * 5000 + "]" * 5000, True),
            ("no file", None, False),
            ("no shapes tuned", doc({key: {"library_version": ver, "shapes": {}}}), "rtx"),
            ("empty buckets", rows([]), "rtx"),
        ]
        for what, text, warns in cases:
            with self.subTest(what):
                if os.path.exists(self.path):
                    os.unlink(self.path)
                if text is not None:
                    with open(self.path, "w", encoding="utf-8") as f:
                        f.write(text)
                for props in (H200, RTX5090):
                    variant = variant_of(props, "faithful")
                    cpp, cpp_warns = cpp_resolve(self.path, props, 5376, 7168, variant, MS)
                    py, py_warns = py_resolve(self.path, props, 5376, 7168, "faithful", MS)
                    self.assertEqual(cpp, py)
                    self.assertTrue(all(how == "heuristic" for _, how in cpp.values()), cpp)
                    want = warns is True or (warns == "rtx" and props is RTX5090)
                    self.assertEqual(bool(cpp_warns), want, cpp_warns)
                    self.assertEqual(bool(py_warns), want, py_warns)

    def test_not_utf8_ignored_by_both(self):
        with open(self.path, "wb") as f:
            f.write(b'{"format": "\xff\xfe"}')
        cpp, cpp_warns = cpp_resolve(self.path, H200, 5376, 7168, "faithful", [128])
        py, py_warns = py_resolve(self.path, H200, 5376, 7168, "faithful", [128])
        self.assertEqual(cpp, py)
        self.assertTrue(cpp_warns and py_warns)

    def test_heuristic_agrees(self):
        for major in (7, 8, 9, 10, 11, 12, 13):
            r = subprocess.run([TOOL, "heuristic", str(major)] + [str(m) for m in MS],
                               capture_output=True, text=True, check=True)
            cpp = {int(m): t for m, t in (line.split() for line in r.stdout.splitlines())}
            props = dict(H200, major=major)
            py = {m: tuning.concrete(tuning.heuristic(props, m)) for m in MS}
            self.assertEqual(cpp, py, major)

    def test_resolve_never_passes_code_zero(self):
        # Python resolves "auto" itself; the library must not resolve it again from its own
        # view of the cache (code 0 would).
        c = tuning.Cache(self.path)
        c._devices[0] = H200
        self.assertEqual(c.resolve(0, 128, 5376, 7168, "faithful"),
                         _native.tiles()[tuning.concrete("auto")])
        self.assertNotEqual(c.resolve(0, 128, 5376, 7168, "faithful"), 0)


if __name__ == "__main__":
    unittest.main()
