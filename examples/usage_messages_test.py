"""What the examples print when they cannot run as typed: the interpreter that lacks a module
and README.md's venv recipe (minimax_h3_block.py, with numpy, the package or torch made
unimportable in a child process), and the launcher command that re-runs sequence_parallel.py
(with this interpreter and --redirects 1 --tee 1, which torch 1.13's launcher needs).
"""

import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
EXE = re.escape(sys.executable)
RECIPE = [r"\n    /usr/bin/python3 -m venv --system-site-packages venv\n",
          r"\n    venv/bin/python -m pip install --no-index dist/minimax_h3_nvfp4-\*\.whl\n"]

# (script, modules made unimportable, arguments, patterns its stderr must match)
CASES = [
    ("minimax_h3_block.py", ["numpy"], ["--m", "4"],
     [r"^minimax_h3_block: cannot import numpy with %s \(" % EXE,
      r"\n    venv/bin/python examples/minimax_h3_block.py --m 4\n?$"] + RECIPE),
    ("minimax_h3_block.py", ["minimax_h3_nvfp4"], [],
     [r"^minimax_h3_block: cannot import minimax_h3_nvfp4 with %s \(" % EXE,
      r"\n    venv/bin/python examples/minimax_h3_block.py\n?$"] + RECIPE),
    ("minimax_h3_block.py", ["torch"], ["--device", "cuda"],
     [r"^minimax_h3_block: cannot import torch with %s \(.*\); --device cuda needs it\. " % EXE,
      r"\n    venv/bin/python examples/minimax_h3_block.py --device cuda\n?$"] + RECIPE),
    ("sequence_parallel.py", [], ["--tokens", "7"],
     [r"^sequence_parallel: run it under torch.distributed.run, e.g.\n    %s -m "
      r"torch.distributed.run --standalone --nproc_per_node=2 --redirects 1 --tee 1 "
      r"\S*sequence_parallel.py --tokens 7\n?$" % EXE]),
]


def run(script, blocked, args):
    """The script as __main__ in a child process, `blocked` modules unimportable, no
    torch.distributed.run environment."""
    path = os.path.join(HERE, script)
    code = ("import runpy, sys\n"
            "for name in %r: sys.modules[name] = None\n"
            "sys.argv = [%r] + %r\n"
            "runpy.run_path(%r, run_name='__main__')\n" % (blocked, path, args, path))
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=env)


class UsageMessagesTest(unittest.TestCase):

    def test_messages(self):
        for script, blocked, args, patterns in CASES:
            with self.subTest(script=script, blocked=blocked, args=args):
                p = run(script, blocked, args)
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                self.assertNotIn("Traceback", p.stderr)
                for pattern in patterns:
                    self.assertRegex(p.stderr, pattern)


if __name__ == "__main__":
    unittest.main(verbosity=2)
