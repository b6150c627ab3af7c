"""The tuning cache (tuning.py) and the command line (python -m minimax_h3_nvfp4), on the CPU.

Devices are given as property dicts (what _native.device_properties returns on a GPU), so the
cache's keying, its round trip, what it ignores and the heuristic are tested without one.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
import warnings

import minimax_h3_nvfp4
from minimax_h3_nvfp4 import _native, tuning

RTX5090 = {"name": "NVIDIA GeForce RTX 5090", "major": 12, "minor": 0, "sm_count": 170,
           "driver_version": 13000}
H200 = {"name": "NVIDIA H200", "major": 9, "minor": 0, "sm_count": 132, "driver_version": 13000}
DEFAULT = "128x256_lockstep"  # the registry's default (kernels/tiles.h: the first config)


class CacheTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "sub", "tune.json")
        self.cache = tuning.Cache(self.path)

    def tearDown(self):
        self.dir.cleanup()

    def fresh(self):
        """A new process's view of the same file."""
        return tuning.Cache(self.path)

    def test_path_from_environment(self):
        old = {k: os.environ.get(k) for k in (tuning.ENV_PATH, "XDG_CACHE_HOME")}
        try:
            os.environ[tuning.ENV_PATH] = "/x/y.json"
            self.assertEqual(tuning.cache_path(), "/x/y.json")
            del os.environ[tuning.ENV_PATH]
            os.environ["XDG_CACHE_HOME"] = "/xdg"
            self.assertEqual(tuning.cache_path(), "/xdg/minimax_h3_nvfp4/tune.json")
            del os.environ["XDG_CACHE_HOME"]
            self.assertEqual(tuning.cache_path(), os.path.expanduser(
                "~/.cache/minimax_h3_nvfp4/tune.json"))
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_heuristic(self):
        self.assertEqual(tuning.default_tile(), DEFAULT)
        # (device, M, heuristic's tile, its reason): a concrete name, never "auto".
        for props, m, tile, why in [
                (RTX5090, 1, "128x128", "M <= 512 on SM12x"),
                (RTX5090, 512, "128x128", "M <= 512 on SM12x"),
                (RTX5090, 513, DEFAULT, "the default config"),
                (dict(RTX5090, minor=1, sm_count=48), 128, "128x128", "M <= 512 on SM12x"),
                (H200, 128, DEFAULT, "the default config"),
                (dict(H200, major=10), 1, DEFAULT, "the default config")]:
            with self.subTest(name=props["name"], major=props["major"], m=m):
                self.assertEqual(tuning.heuristic_with_reason(props, m), (tile, why))
                self.assertEqual(tuning.heuristic(props, m), tile)
        # Without a file: the heuristic, silently.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.assertEqual(self.cache.choose(RTX5090, 128, 5376, 7168),
                             ("128x128", "heuristic"))
            self.assertEqual(self.cache.choose(RTX5090, 4096, 5376, 7168),
                             (DEFAULT, "heuristic"))
        for name in ("128x128", DEFAULT):
            self.assertIn(name, _native.tiles())

    def test_round_trip(self):
        self.cache.record(H200, 5376, 7168, "faithful", {128: "128x128", 4096: "128x256_lockstep"},
                          {128: 0.25, 4096: 1.6})
        self.cache.record(RTX5090, 256, 512, "faithful", {1: "128x256"})
        c = self.fresh()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.assertEqual(c.choose(H200, 100, 5376, 7168), ("128x128", "tuned"))
            self.assertEqual(c.choose(H200, 128, 5376, 7168, "faithful"), ("128x128", "tuned"))
            self.assertEqual(c.choose(H200, 3000, 5376, 7168), ("128x256_lockstep", "tuned"))
            self.assertEqual(c.choose(H200, 10 ** 6, 5376, 7168), ("128x256_lockstep", "tuned"))
            # Another emulation or shape of a known device: the heuristic.
            self.assertEqual(c.choose(H200, 128, 5376, 7168, "fast"), (DEFAULT, "heuristic"))
            self.assertEqual(c.choose(H200, 128, 5376, 4096), (DEFAULT, "heuristic"))
            # On SM12x the emulation is not part of the key.
            self.assertEqual(c.choose(RTX5090, 64, 256, 512, "fast"), ("128x256", "tuned"))
        with open(self.path) as f:
            doc = json.load(f)
        self.assertEqual(doc["format"], tuning.FORMAT)
        self.assertEqual(len(doc["devices"]), 2)
        entry = doc["devices"][tuning.device_key(H200)]
        self.assertEqual(entry["library_version"], minimax_h3_nvfp4.__version__)
        self.assertEqual(entry["device"]["compute_capability"], "9.0")
        rows = entry["shapes"]["n=5376 k=7168 faithful"]["buckets"]
        self.assertEqual(rows[0], {"m": 128, "tile": "128x128", "median_ms": 0.25})
        # The key names every part the issue asks for.
        key = tuning.device_key(H200)
        for part in ("NVIDIA H200", "sm_90", "132 SMs", "driver 13000",
                     "minimax_h3_nvfp4 " + minimax_h3_nvfp4.__version__):
            self.assertIn(part, key)

    def test_cached_auto_is_the_default(self):
        # A cache may name "auto" (C++ accepts it): choose() answers the config it runs.
        self.cache.record(H200, 5376, 7168, "faithful", {128: "auto"})
        self.assertEqual(self.fresh().choose(H200, 128, 5376, 7168), (DEFAULT, "tuned"))

    def test_record_updates_this_process(self):
        self.assertEqual(self.cache.choose(H200, 128, 5376, 7168), (DEFAULT, "heuristic"))
        self.cache.record(H200, 5376, 7168, "faithful", {128: "128x128"})
        self.assertEqual(self.cache.choose(H200, 128, 5376, 7168), ("128x128", "tuned"))

    def test_resolve_is_memoized(self):
        self.cache.record(H200, 5376, 7168, "faithful", {128: "128x128"})
        c = self.fresh()
        c._devices[0] = H200  # what device(0) asks the driver for, once
        code = c.resolve(0, 128, 5376, 7168, "faithful")
        self.assertEqual(code, _native.tiles()["128x128"])
        self.assertEqual(c._memo[(0, 128, 5376, 7168, "faithful")], code)
        os.unlink(self.path)  # the file is not read again
        self.assertEqual(c.resolve(0, 128, 5376, 7168, "faithful"), code)

    def write(self, text):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path, "w") as f:
            f.write(text)

    def assert_ignored_with_warning(self, pattern, device=H200):
        c = self.fresh()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertEqual(c.choose(device, 128, 5376, 7168), (tuning.heuristic(device, 128),
                                                                 "heuristic"))
        messages = [str(x.message) for x in w]
        self.assertTrue(any(re.search(pattern, m) for m in messages), messages)
        self.assertTrue(all(issubclass(x.category, RuntimeWarning) for x in w))

    def test_corrupt_cache_ignored_with_warning(self):
        self.write("{not json")
        self.assert_ignored_with_warning(r"tune\.json is not a valid cache .*heuristic")
        self.write(json.dumps({"format": "something else", "devices": {}}))
        self.assert_ignored_with_warning(r"not a valid cache \(format must be")
        self.write(json.dumps({"format": tuning.FORMAT, "devices": {
            tuning.device_key(H200): {"library_version": minimax_h3_nvfp4.__version__,
                                      "shapes": {"n=5376 k=7168 faithful": {
                                          "buckets": [{"m": 0, "tile": "128x128"}]}}}}}))
        self.assert_ignored_with_warning(r"a bucket must have an integer m in \[1, ")

    def test_other_library_version_ignored_with_warning(self):
        self.cache.record(H200, 5376, 7168, "faithful", {128: "128x128"})
        with open(self.path) as f:
            doc = json.load(f)
        (key, entry), = doc["devices"].items()
        entry["library_version"] = "0.0.1"
        doc["devices"] = {key.replace(minimax_h3_nvfp4.__version__, "0.0.1"): entry}
        self.write(json.dumps(doc))
        self.assert_ignored_with_warning(r"holds entries of minimax_h3_nvfp4 0\.0\.1, not this "
                                         r"version")
        # Recording again drops the foreign entries.
        self.fresh().record(H200, 5376, 7168, "faithful", {128: "128x128"})
        with open(self.path) as f:
            self.assertEqual(len(json.load(f)["devices"]), 1)

    def test_other_device_ignored_with_warning(self):
        self.cache.record(H200, 5376, 7168, "faithful", {128: "128x128"})
        other_driver = dict(H200, driver_version=12080)
        self.assert_ignored_with_warning(r"has no entry for this device \(NVIDIA H200 \| sm_90 \| "
                                         r"132 SMs \| driver 12080", device=other_driver)
        self.assert_ignored_with_warning(r"has no entry for this device", device=RTX5090)

    def test_unknown_tile_name_ignored_with_warning(self):
        self.cache.record(H200, 5376, 7168, "faithful", {128: "64x64_not_registered"})
        self.assert_ignored_with_warning(r"names tile '64x64_not_registered', which this library "
                                         r"does not have")


SM12X_AUTO = ("M=1, 128 -> 128x128 (heuristic: M <= 512 on SM12x); M=1024, 4096, 16384 -> "
              "%s (heuristic: the default config)" % DEFAULT)

# info's tile="auto" lines for the SM12x parts, with or without a GPU: (the part as info names
# it, its choices at __main__.INFO_MS).
SM12X_INFO = [
    ("NVIDIA GeForce RTX 5090, sm_120, 170 SMs", SM12X_AUTO),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition, sm_120, 188 SMs", SM12X_AUTO),
    ("NVIDIA GB10, sm_121, 48 SMs", SM12X_AUTO),
]

# A present device's line (what _auto_picks gives with the cache): (device, tuned winners
# recorded for N=5376 K=7168, its choices at INFO_MS).
DEVICE_INFO = [
    (RTX5090, {}, SM12X_AUTO),
    (H200, {}, "M=1, 128, 1024, 4096, 16384 -> %s (heuristic: the default config)" % DEFAULT),
    (H200, {128: "128x128", 4096: "128x256"},
     "M=1, 128 -> 128x128 (tuning cache winner); M=1024, 4096, 16384 -> 128x256 (tuning cache "
     "winner)"),
    (RTX5090, {1: "auto"}, "M=1, 128, 1024, 4096, 16384 -> %s (tuning cache winner)" % DEFAULT),
]


class InfoPicksTest(unittest.TestCase):

    def test_device_lines(self):
        from minimax_h3_nvfp4 import __main__ as cli
        self.assertEqual(cli.INFO_MS, (1, 128, 1024, 4096, 16384))
        for props, winners, choices in DEVICE_INFO:
            with self.subTest(name=props["name"], winners=winners):
                with tempfile.TemporaryDirectory() as d:
                    cache = tuning.Cache(os.path.join(d, "tune.json"))
                    if winners:
                        cache.record(props, 5376, 7168, "faithful", winners)
                    self.assertEqual(cli._auto_picks(props, cache), choices)


class CommandLineTest(unittest.TestCase):

    def run_cli(self, *args):
        env = dict(os.environ)
        self.tmp = tempfile.TemporaryDirectory()
        env[tuning.ENV_PATH] = os.path.join(self.tmp.name, "tune.json")
        try:
            return subprocess.run([sys.executable, "-m", "minimax_h3_nvfp4"] + list(args),
                                  env=env, capture_output=True, text=True, timeout=300)
        finally:
            self.tmp.cleanup()

    def test_info(self):
        p = self.run_cli("info")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("minimax_h3_nvfp4 %s" % minimax_h3_nvfp4.__version__, p.stdout)
        lines = p.stdout.splitlines()
        self.assertIn("  tile configs:   auto (the API's default: resolved per call, below), "
                      "%s (the registry's default: auto's fallback), 128x256, 128x128" % DEFAULT,
                      lines)
        if _native.device_count()[0] == 0:
            self.assertIn("CUDA devices: none: emulator only (", p.stdout)
            self.assertNotIn("on cuda:", p.stdout)
        # The SM12x parts' choices, with or without a GPU, the last lines.
        self.assertEqual(lines[-1 - len(SM12X_INFO):], [
            'tile="auto" on SM12x parts without a tuning cache entry (the heuristic), '
            'N=5376 K=7168:'] + ["  %s: %s" % (part, c) for part, c in SM12X_INFO])

    def test_selftest(self):
        p = self.run_cli("selftest")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"selftest PASSED: [1-9]\d* checks, 0 failed")

    def test_selftest_fails_on_a_wrong_golden(self):
        # A selftest that cannot fail proves nothing: one flipped bit in the goldens fails it.
        from minimax_h3_nvfp4 import selftest
        cases = selftest.load_cases()
        cases["op_exact"]["out"] = cases["op_exact"]["out"].copy()
        cases["op_exact"]["out"][5, 7] ^= 1
        problems = [p for _, p in selftest.check_emulator(cases) if p]
        self.assertEqual(len(problems), 2)  # both GEMMs of op_exact
        self.assertRegex(problems[0], r"^out: 1 of 4736 elements differ; first at \[5, 7\]")

    def test_tune_and_bench_need_cuda(self):
        if _native.device_count()[0] > 0:
            self.skipTest("a CUDA device is present")
        for args in (("tune", "--m", "1"), ("bench", "--m", "1"), ("bench", "--first-call")):
            p = self.run_cli(*args)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertRegex(p.stderr, r"%s: error: needs a CUDA device and torch with CUDA: "
                             % args[0])

    def test_usage_errors_exit_2(self):
        for args in ((), ("bogus",), ("tune", "--k", "100"), ("bench", "--m", "1,x"),
                     ("bench", "--tile", "nope"), ("tune", "--reps", "0")):
            with self.subTest(args=args):
                p = self.run_cli(*args)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn("error:", p.stderr)

    def test_star_import_without_torch(self):
        p = subprocess.run([sys.executable, "-c", "import sys; sys.modules['torch'] = None\n"
                            "from minimax_h3_nvfp4 import *\n"
                            "import minimax_h3_nvfp4 as m\n"
                            "assert 'MiniMaxH3NVFP4OutProj' not in m.__all__, m.__all__\n"
                            "print(minimax_h3_nvfp4_out_proj.__name__)"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "minimax_h3_nvfp4_out_proj")


if __name__ == "__main__":
    unittest.main(verbosity=2)
