#!/usr/bin/env bash
# nvcc_wrapper.sh REPORT VERBOSE NVCC ARGS...: runs nvcc, keeping ptxas' resource report
# (-Xptxas=-v goes to stderr) in REPORT; prints it too when VERBOSE is 1. Errors always print.
set -uo pipefail
report=$1 verbose=$2
shift 2
"$@" 2>"$report"
rc=$?
if [[ $rc -ne 0 || $verbose == 1 ]]; then
  cat "$report" >&2
fi
exit $rc
