#!/usr/bin/env bash
# On the GPU machine (torch + CUDA; no Bazel there): the Python package's tests against an installed
# package, then the example at M = 4096.
#
#   python/tests/run_gpu_tests.sh [PKG_DIR]      (default: .dev/py, from the repository root)
#
# PKG_DIR holds minimax_h3_nvfp4/ as `./bazelw run //python:install -- PKG_DIR` wrote it (on the
# build machine). Runs: the CPU tests (api_test.py, cli_test.py, torch_cpu_test.py), the GPU
# tests (gpu_test.py), the command line (selftest, tune, info, bench, bench --first-call), the
# tile="auto" check after tune (auto_tile_check.py), the sequence-parallel
# example with 2 processes, and examples/minimax_h3_block.py on the GPU and the CPU.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pkg=${1:-$root/.dev/py}
[[ $pkg == /* ]] || pkg=$PWD/$pkg
if [[ ! -f $pkg/minimax_h3_nvfp4/libminimax_h3_nvfp4.so ]]; then
  echo "run_gpu_tests: no installed package in $pkg (./bazelw run //python:install -- DIR)" >&2
  exit 1
fi
export PYTHONPATH=$pkg${PYTHONPATH:+:$PYTHONPATH}
export H3_TESTDATA=$root/testdata
python3 - <<'PY' || exit 1
import sys, torch, minimax_h3_nvfp4 as m
print("python", sys.version.split()[0], "| torch", torch.__version__, "| package",
      m.library_path())
if not torch.cuda.is_available():
    sys.exit("run_gpu_tests: torch sees no CUDA device")
print("device", torch.cuda.get_device_name(0), "| backend", m.backend_name())
PY

rc=0
step() {
  echo
  echo "=== $*"
  "$@" || { echo "=== FAILED: $*"; rc=1; }
}
# A scratch tuning cache for the whole run: tile="auto" never reads the user's.
export MINIMAX_H3_NVFP4_TUNE_CACHE=${MINIMAX_H3_NVFP4_TUNE_CACHE:-$(mktemp -d)/tune.json}
step python3 "$root/python/tests/api_test.py"
step python3 "$root/python/tests/cli_test.py"
step python3 "$root/python/tests/torch_cpu_test.py"
step python3 "$root/python/tests/gpu_test.py"
# The command line on the GPU (issue 19; not yet run on one): selftest checks each device
# against the emulator; tune writes the scratch cache, which info then shows and tile="auto" uses.
step python3 -m minimax_h3_nvfp4 selftest
# The first call of a fresh process, before any tuning cache exists (tile="auto": heuristic).
step python3 -m minimax_h3_nvfp4 bench --first-call
step python3 -m minimax_h3_nvfp4 tune --m 1,128,1024,4096
step python3 -m minimax_h3_nvfp4 tune --m 1,128,1024,4096 --sm90_emulation fast
step python3 -m minimax_h3_nvfp4 info
# tile="auto" runs the tuned winner at each bucket (the op reports the tile it ran).
step python3 "$root/python/tests/auto_tile_check.py"
# Host time per eager call beside F.linear's (PASS / FAIL against ~20 us at M = 1: figures,
# not a test), and the first call again, now with the cache written.
step python3 -m minimax_h3_nvfp4 bench --m 1,128,4096
step python3 -m minimax_h3_nvfp4 bench --first-call
step python3 -m minimax_h3_nvfp4 bench --first-call --m 128 --sm90_emulation fast
ngpu=$(python3 -c 'import torch; print(torch.cuda.device_count())')
echo "=== $ngpu GPU(s): sequence_parallel uses NCCL with a GPU per rank, gloo where ranks share one"
step python3 -m torch.distributed.run --standalone --nproc_per_node=2 --redirects 1 --tee 1 \
  "$root/examples/sequence_parallel.py" --device cuda
step python3 "$root/examples/minimax_h3_block.py" --device cuda --m 4096
step python3 "$root/examples/minimax_h3_block.py" --device cuda --m 4096 --sm90_emulation fast
step python3 "$root/examples/minimax_h3_block.py" --device cpu --m 256
echo
if ((rc == 0)); then echo "run_gpu_tests: ALL PASSED"; else echo "run_gpu_tests: FAILURES"; fi
exit "$rc"
