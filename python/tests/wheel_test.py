"""The wheel end to end: built from the runfiles as `./bazelw run //python:wheel` builds it,
pip-installed offline (--no-index) into a fresh venv, then used from a folder outside the
repository with nothing of the checkout on the path: import, __version__, info, selftest.

The venv is made with --system-site-packages: there is no package index here, and NumPy (the
wheel's one dependency) comes from the system (Debian's python3-numpy). The interpreter is the
one running this test (python3 under Bazel: /usr/bin/python3).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))  # python/wheel.py
import wheel  # noqa: E402


def core_version():
    with open(os.path.join(wheel.runfiles_root(), "core", "version.h")) as f:
        return re.search(r'^#define H3_VERSION "([^"]+)"$', f.read(), re.M).group(1)


class WheelTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="h3_wheel_test_")
        cls.dist = os.path.join(cls.tmp, "dist")
        cls.path = wheel.build_from_runfiles(cls.dist)
        cls.venv = os.path.join(cls.tmp, "venv")
        cls.py = os.path.join(cls.venv, "bin", "python")
        cls.outside = os.path.join(cls.tmp, "elsewhere")
        os.makedirs(cls.outside)
        # Nothing of the checkout or Bazel's runfiles may leak into the venv's interpreter.
        cls.env = {k: v for k, v in os.environ.items()
                   if k not in ("PYTHONPATH", "MINIMAX_H3_NVFP4_LIB", "PYTHONHOME")
                   and not k.startswith("RUNFILES")}
        cls.env["MINIMAX_H3_NVFP4_TUNE_CACHE"] = os.path.join(cls.tmp, "tune.json")
        cls.env["PIP_NO_CACHE_DIR"] = "1"
        cls.env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        cls.run_ok([sys.executable, "-m", "venv", "--system-site-packages", cls.venv],
                   "python3 -m venv (Debian: the python3-venv package)")
        cls.pip = cls.run_ok([cls.py, "-m", "pip", "install", "--no-index", cls.path],
                             "pip install --no-index of the wheel")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def run_ok(cls, cmd, what):
        p = cls.sh(cmd)
        if p.returncode != 0:
            raise AssertionError("%s failed (exit %d):\n%s\n%s" % (what, p.returncode, p.stdout,
                                                                   p.stderr))
        return p

    @classmethod
    def sh(cls, cmd):
        return subprocess.run(cmd, cwd=cls.outside, env=cls.env, capture_output=True,
                              text=True, timeout=600)

    def test_one_wheel_named_by_version_and_tag(self):
        names = os.listdir(self.dist)
        self.assertEqual(len(names), 1, names)
        self.assertRegex(names[0], r"^minimax_h3_nvfp4-%s-py3-none-manylinux_2_\d+_x86_64\.whl$"
                         % re.escape(core_version()))
        print("wheel: %s, %d bytes" % (names[0], os.path.getsize(self.path)))

    def test_tag_is_the_librarys_glibc(self):
        # The builder's ELF reader against binutils' view of the same library, where installed.
        lib = os.path.join(wheel.runfiles_root(), "python", wheel.LIB)
        tag = wheel.platform_tag(lib)
        self.assertIn(tag, os.path.basename(self.path))
        objdump = shutil.which("objdump")
        if objdump is None:
            self.skipTest("objdump (binutils) not installed: the ELF reader is not cross-checked")
        dump = subprocess.run([objdump, "-T", lib], capture_output=True, text=True,
                              check=True).stdout
        highest = max(int(v) for v in re.findall(r"\bGLIBC_2\.(\d+)", dump))
        self.assertEqual(tag, "manylinux_2_%d_x86_64" % highest)
        needed, _ = wheel.elf_needs(lib)
        self.assertIn("libc.so.6", needed)
        self.assertLessEqual(set(needed), wheel.ALLOWED_NEEDED)

    def test_record_and_metadata(self):
        with zipfile.ZipFile(self.path) as z:
            names = z.namelist()
            info = "minimax_h3_nvfp4-%s.dist-info" % core_version()
            for required in ("minimax_h3_nvfp4/__init__.py", "minimax_h3_nvfp4/__main__.py",
                             "minimax_h3_nvfp4/py.typed",
                             "minimax_h3_nvfp4/selftest_goldens.npz",
                             "minimax_h3_nvfp4/libminimax_h3_nvfp4.so",
                             info + "/METADATA", info + "/WHEEL", info + "/RECORD"):
                self.assertIn(required, names)
            record = z.read(info + "/RECORD").decode().splitlines()
            self.assertEqual(sorted(r.split(",")[0] for r in record), sorted(names))
            for row in record:
                path, digest, size = row.split(",")
                if path.endswith("RECORD"):
                    self.assertEqual((digest, size), ("", ""))
                    continue
                data = z.read(path)
                self.assertEqual(int(size), len(data), path)
                self.assertEqual(digest, wheel._record_hash(data), path)
            meta = z.read(info + "/METADATA").decode()
        self.assertIn("Requires-Dist: numpy\n", meta)
        self.assertIn("Provides-Extra: torch\n", meta)
        self.assertIn('Requires-Dist: torch; extra == "torch"\n', meta)

    def test_import_from_the_venv(self):
        p = self.run_ok([self.py, "-c", "import minimax_h3_nvfp4 as m; "
                         "print(m.__version__); print(m.__file__); print(m.library_path())"],
                        "import")
        version, init, lib = p.stdout.split()
        self.assertEqual(version, core_version())
        self.assertTrue(init.startswith(self.venv), init)
        self.assertTrue(lib.startswith(os.path.dirname(init)), lib)
        print("venv import: __version__ %s from %s" % (version, os.path.dirname(init)))

    def test_star_import_without_torch(self):
        # torch made unimportable (None in sys.modules): the torch modules must not be in
        # __all__ then.
        p = self.run_ok([self.py, "-c", "import sys; sys.modules['torch'] = None; "
                         "from minimax_h3_nvfp4 import *; print(sorted(k for k in dir() "
                         "if not k.startswith('_')))"], "star import without torch")
        self.assertIn("minimax_h3_nvfp4_out_proj", p.stdout)
        self.assertNotIn("MiniMaxH3NVFP4OutProj", p.stdout)

    def test_info(self):
        p = self.run_ok([self.py, "-m", "minimax_h3_nvfp4", "info"], "info")
        self.assertRegex(p.stdout, r"^minimax_h3_nvfp4 %s\n" % re.escape(core_version()))
        self.assertRegex(p.stdout, r"native library: \S+ \(version %s, C ABI \d+\)"
                         % re.escape(core_version()))
        self.assertRegex(p.stdout, r"CUDA devices: none: emulator only|cuda:0: ")
        self.assertIn("tuning cache: " + self.env["MINIMAX_H3_NVFP4_TUNE_CACHE"], p.stdout)
        print(p.stdout)

    def test_selftest(self):
        p = self.run_ok([self.py, "-m", "minimax_h3_nvfp4", "selftest"], "selftest")
        self.assertRegex(p.stdout, r"selftest PASSED: \d+ checks, 0 failed, [0-9.]+ s")
        print(p.stdout)

    def test_printed_install_hint_runs_as_printed(self):
        # The hint `./bazelw run //python:wheel` prints, run line by line in a fresh folder
        # under bash: a venv over Debian's python3, then an offline pip install and selftest
        # (a bare `python3 -m pip install` fails offline where the first python3 lacks NumPy).
        where = os.path.join(self.tmp, "hint")
        os.makedirs(where)
        hint = wheel.install_hint(self.path, where)
        lines = [ln.strip() for ln in hint.splitlines() if ln.startswith("    ")]
        self.assertEqual(len(lines), 3, hint)
        self.assertTrue(lines[0].startswith("/usr/bin/python3 -m venv"), hint)
        for line in lines:
            p = subprocess.run(["bash", "-c", line], cwd=where, env=self.env,
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(p.returncode, 0, "%s\n%s%s" % (line, p.stdout, p.stderr))
        self.assertRegex(p.stdout, r"selftest PASSED")

    def test_console_script_and_usage_errors(self):
        script = os.path.join(self.venv, "bin", "minimax-h3-nvfp4")
        p = self.run_ok([script, "--version"], "minimax-h3-nvfp4 --version")
        self.assertEqual(p.stdout.strip(), "minimax_h3_nvfp4 " + core_version())
        for args in (["bogus"], [], ["tune", "--n", "100"], ["bench", "--m", "0"]):
            with self.subTest(args=args):
                p = self.sh([self.py, "-m", "minimax_h3_nvfp4"] + args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("error:", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
