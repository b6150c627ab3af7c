"""The command line (python -m minimax_h3_nvfp4), on the CPU.

Devices are given as property dicts (what _native.device_properties returns on a GPU), so what
`info` says tile="auto" runs is tested without one. The tuning cache and the heuristic behind it
are the library's: kernels:tune_cache_test tests them, python:tuning_binding_test the binding.
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

import minimax_h3_nvfp4
from minimax_h3_nvfp4 import _native, tuning

RTX5090 = {"name": "NVIDIA GeForce RTX 5090", "major": 12, "minor": 0, "sm_count": 170,
           "driver_version": 13000}
H200 = {"name": "NVIDIA H200", "major": 9, "minor": 0, "sm_count": 132, "driver_version": 13000}
DEFAULT = "128x128_staged"  # the registry's default (kernels/device/tiles.h kOutProjTileDefault)


def runfile(rel):
    base, ws = os.environ.get("TEST_SRCDIR"), os.environ.get("TEST_WORKSPACE")
    if base and ws:
        return os.path.join(base, ws, rel)
    return os.path.join(os.path.dirname(__file__), "..", "..", rel)


SM12X_AUTO = "M=1, 128, 1024, 4096, 16384 -> %s (heuristic: the default config)" % DEFAULT

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

    def run_cli(self, *args, cache_text=None):
        env = dict(os.environ)
        self.tmp = tempfile.TemporaryDirectory()
        self.cache_path = env[tuning.ENV_PATH] = os.path.join(self.tmp.name, "tune.json")
        if cache_text is not None:
            with open(self.cache_path, "w") as f:
                f.write(cache_text)
        try:
            return subprocess.run([sys.executable, "-m", "minimax_h3_nvfp4"] + list(args),
                                  env=env, capture_output=True, text=True, timeout=300)
        finally:
            self.tmp.cleanup()

    def test_info_lists_the_cache(self):
        with open(runfile("testdata/tune_cache/python_written.json")) as f:
            golden = f.read().replace("0.1.0", minimax_h3_nvfp4.__version__)
        p = self.run_cli("info", cache_text=golden)
        self.assertEqual(p.returncode, 0, p.stderr)
        # An entry of a device present here is marked " [cuda:N]" (the H200 entry, on the H200).
        lines = [re.sub(r" \[cuda:\d+\]$", "", line) for line in p.stdout.splitlines()]
        at = lines.index("tuning cache: %s (2 device entries of this version)" % self.cache_path)
        v = minimax_h3_nvfp4.__version__
        self.assertEqual(lines[at + 1:at + 6], [
            "  NVIDIA GeForce RTX 5090 | sm_120 | 170 SMs | driver 13000 | minimax_h3_nvfp4 " + v,
            "    n=256 k=512 native: M=1 -> 128x256, M=16384 -> 128x256_lockstep",
            "  NVIDIA H200 | sm_90 | 132 SMs | driver 13000 | minimax_h3_nvfp4 " + v,
            "    n=5376 k=7168 faithful: M=1 -> 128x128, M=128 -> 128x128, M=1024 -> 128x128, "
            "M=4096 -> 128x256_lockstep",
            "    n=5376 k=7168 fast: M=128 -> 128x256"])
        p = self.run_cli("info", cache_text="{")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("tuning cache: %s (0 device entries of this version)" % self.cache_path,
                      p.stdout)
        self.assertRegex(p.stderr, r"RuntimeWarning: minimax_h3_nvfp4: the tuning cache .* is "
                                   r"not a valid cache \(invalid JSON at byte 1: ")

    def test_info(self):
        p = self.run_cli("info")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("minimax_h3_nvfp4 %s" % minimax_h3_nvfp4.__version__, p.stdout)
        lines = p.stdout.splitlines()
        self.assertIn("  tile configs:   auto (the API's default: resolved per call, below), "
                      "128x256_lockstep, 128x256, 128x128, %s (the registry's default: auto's "
                      "fallback)" % DEFAULT, lines)
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
