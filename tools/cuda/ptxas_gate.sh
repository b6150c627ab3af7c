#!/usr/bin/env bash
# ptxas_gate.sh REPORT SOURCE GATED_ARCHS: fails (exit 1, one line per finding) when ptxas' -v
# report of SOURCE shows
#  - spill stores or loads in a function compiled for one of GATED_ARCHS (comma-separated), or
#  - ptxas ignoring setmaxnreg, for any architecture: C7506 "'setmaxnreg' ignored to maintain
#    compatibility into 'extern' call" (kernels/device/ptx.cuh), and the same words under other codes
#    (C7504 across compilation units, C7508 with no register count at entry).
# Either one silently undoes a kernel's register plan (local-memory traffic in the main loop, or
# the consumers never getting their registers), which no test notices: so the build stops.
# The report holds one block per ptxas run (one architecture), each opened by "N bytes gmem";
# a block's architecture is the one its "Compiling entry function ... for 'sm_XY'" lines name,
# which also covers functions ptxas lists before the first entry of the block.
set -euo pipefail
report=$1 source=$2 gated=$3

awk -v source="$source" -v gated=",$gated," '
  function demangle(name,   cmd, out) {
    cmd = "c++filt " name " 2>/dev/null"
    out = name
    if ((cmd | getline out) <= 0) out = name
    close(cmd)
    return out
  }
  # Pass 1: the architecture of each block.
  FNR == NR {
    if ($0 ~ /bytes gmem/) block++
    if (match($0, /for .sm_[0-9]+[af]?.$/)) arch[block] = substr($0, RSTART + 5, RLENGTH - 6)
    next
  }
  FNR == 1 { block = 0 }
  /bytes gmem/ { block++ }
  /setmaxnreg.* ignored/ {
    line = $0
    sub(/^ptxas [a-z]+ *: */, "", line)
    printf("ptxas gate: %s: %s: ptxas ignored setmaxnreg: %s\n", source,
           arch[block] == "" ? "?" : arch[block], line)
    failed = 1
  }
  /Function properties for / {
    fn = $0
    sub(/.*Function properties for /, "", fn)
  }
  /bytes spill stores/ {
    stores = $0; sub(/ bytes spill stores.*/, "", stores); sub(/.*, /, "", stores)
    loads = $0; sub(/ bytes spill loads.*/, "", loads); sub(/.*, /, "", loads)
    if ((stores + 0 > 0 || loads + 0 > 0) && index(gated, "," arch[block] ",") > 0) {
      printf("ptxas gate: %s: %s: %s spills: %d bytes spill stores, %d bytes spill loads\n",
             source, arch[block], demangle(fn), stores, loads)
      failed = 1
    }
  }
  END { exit failed ? 1 : 0 }
' "$report" "$report" || {
  echo "ptxas gate: $source: product kernels must not spill on ${gated:-no architecture} nor" \
    "have setmaxnreg ignored (cuda_library's ptxas_gate / gated_archs, tools/cuda/defs.bzl)" >&2
  exit 1
}
