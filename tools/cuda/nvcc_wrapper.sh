#!/usr/bin/env bash
# nvcc_wrapper.sh REPORT VERBOSE GATE GATED_ARCHS SOURCE NVCC ARGS...: runs nvcc, keeping
# everything it prints (ptxas' resource report from -Xptxas=-v included) in REPORT. Prints the
# whole report on failure or when VERBOSE is 1, and otherwise whatever is not ptxas' report
# (compiler warnings). GATE: the path of ptxas_gate.sh, or "" for no gate; when set, a report
# with spills on GATED_ARCHS or an ignored setmaxnreg fails the action (ptxas_gate.sh).
set -uo pipefail
report=$1 verbose=$2 gate=$3 gated_archs=$4 source=$5
shift 5
"$@" 2>"$report"
rc=$?
if [[ $rc -ne 0 || $verbose == 1 ]]; then
  cat "$report" >&2
else
  grep -vE '^ptxas info|^    [0-9]+ bytes (stack frame|gmem)' "$report" >&2 || true
fi
if [[ $rc -eq 0 && -n $gate ]]; then
  "$gate" "$report" "$source" "$gated_archs" >&2 || rc=1
fi
exit $rc
