#!/usr/bin/env bash
# ./bazelw run //python:install -- DIR
# Puts the importable package minimax_h3_nvfp4 (the Python sources and libminimax_h3_nvfp4.so,
# built -c opt) into DIR/minimax_h3_nvfp4/; DIR is relative to where the command was run. Then:
#   PYTHONPATH=DIR python3 -c 'import minimax_h3_nvfp4'
set -euo pipefail

if [[ $# -ne 1 || $1 == -h || $1 == --help ]]; then
  echo "usage: ./bazelw run //python:install -- DIR" >&2
  exit 2
fi
dest=$1
if [[ $dest != /* ]]; then
  dest="${BUILD_WORKING_DIRECTORY:-$PWD}/$dest"
fi

# The runfiles tree: `bazel run` starts us inside it; bazel-bin/python/install finds it beside.
if [[ -n ${RUNFILES_DIR:-} && -d $RUNFILES_DIR/minimax_h3_nvfp4/python ]]; then
  root=$RUNFILES_DIR/minimax_h3_nvfp4
elif [[ -d $0.runfiles/minimax_h3_nvfp4/python ]]; then
  root=$0.runfiles/minimax_h3_nvfp4
else
  root=$PWD
fi
src=$root/python
if [[ ! -f $src/libminimax_h3_nvfp4.so || ! -f $src/minimax_h3_nvfp4/diffusion_ops.py ]]; then
  echo "install: the package's files are not under $src (run it as ./bazelw run //python:install -- DIR)" >&2
  exit 1
fi

pkg=$dest/minimax_h3_nvfp4
mkdir -p "$pkg"
rm -rf "$pkg/__pycache__"
for f in "$src"/minimax_h3_nvfp4/*.py "$src"/minimax_h3_nvfp4/py.typed \
  "$src"/minimax_h3_nvfp4/selftest_goldens.npz; do
  install -m 0644 "$f" "$pkg/"
done
install -m 0755 "$src/libminimax_h3_nvfp4.so" "$pkg/libminimax_h3_nvfp4.so"
echo "install: minimax_h3_nvfp4 installed into $dest"
echo "install: use it with  PYTHONPATH=$dest python3 -c 'import minimax_h3_nvfp4'"
