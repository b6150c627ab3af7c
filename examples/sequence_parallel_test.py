"""examples/sequence_parallel.py under torch.distributed.run with 2 and 3 CPU processes (gloo,
the emulator), small shapes: the gathered shards must be bit-identical to one process; and with
per-shard calibration (a different NVFP4 grid per rank) the same check must fail.

Debian's torch 1.13 on Python 3.11: torch.distributed.run's default --redirects / --tee ("0")
parse to None (its Std.from_str does not find the zero flag under 3.11's enum) and the launcher
crashes; "--redirects 1 --tee 1" (stdout to a log file and to the console) avoids that, and
works with newer torch too.
"""

import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sequence_parallel.py")
SHAPE = ["--device", "cpu", "--tokens", "37", "--out_features", "256", "--in_features", "512"]


def torchrun(nproc, *extra):
    with tempfile.TemporaryDirectory() as logs:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc_per_node=%d" % nproc, "--redirects", "1", "--tee", "1",
               "--log_dir", logs, SCRIPT] + SHAPE + list(extra)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, OMP_NUM_THREADS="1"))
        return p, time.perf_counter() - t0


class SequenceParallelTest(unittest.TestCase):

    def check(self, nproc, shards):
        p, seconds = torchrun(nproc)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        line = re.search(r"sequence_parallel: world %d .*" % nproc, p.stdout)
        self.assertIsNotNone(line, p.stdout + p.stderr)
        self.assertIn("shards %s rows" % shards, line.group(0))
        self.assertIn("BIT-IDENTICAL to one process over all 37 tokens", line.group(0))
        print("%s  [%.1f s]" % (line.group(0), seconds))

    def test_two_processes(self):
        self.check(2, "[19, 18]")

    def test_three_processes(self):
        self.check(3, "[13, 12, 12]")

    def test_printed_command_runs(self):
        # Started without the launcher, the script prints the command to run it with: run as
        # printed, it must pass.
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
        p = subprocess.run([sys.executable, SCRIPT] + SHAPE, capture_output=True, text=True,
                           timeout=120, env=env)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        cmd = p.stderr.strip().splitlines()[-1].strip()
        self.assertIn(" --redirects 1 --tee 1 ", cmd)
        q = subprocess.run(shlex.split(cmd), capture_output=True, text=True, timeout=600,
                           env=dict(env, OMP_NUM_THREADS="1"))
        self.assertEqual(q.returncode, 0, cmd + "\n" + q.stdout + q.stderr)
        self.assertIn("BIT-IDENTICAL to one process over all 37 tokens", q.stdout)

    def test_per_shard_scale_is_caught(self):
        p, _ = torchrun(2, "--per_shard_scale")
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertRegex(p.stdout, r"DIFFERS from one process over all 37 tokens at \d+ elements")


if __name__ == "__main__":
    import torch.distributed as dist
    if not (dist.is_available() and dist.is_gloo_available()):
        sys.exit("sequence_parallel_test: this torch has no torch.distributed with gloo, got "
                 "is_available()=%s" % dist.is_available())
    unittest.main(verbosity=2)
