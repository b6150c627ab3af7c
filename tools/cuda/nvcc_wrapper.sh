#!/usr/bin/env bash
# nvcc_wrapper.sh REPORT VERBOSE NVCC ARGS...: runs nvcc, keeping everything it prints (ptxas'
# resource report from -Xptxas=-v included) in REPORT. Prints the whole report on failure or
# when VERBOSE is 1, and otherwise whatever is not ptxas' report (compiler warnings).
set -uo pipefail
report=$1 verbose=$2
shift 2
"$@" 2>"$report"
rc=$?
if [[ $rc -ne 0 || $verbose == 1 ]]; then
  cat "$report" >&2
else
  grep -vE '^ptxas info|^    [0-9]+ bytes (stack frame|gmem)' "$report" >&2 || true
fi
exit $rc
