#!/usr/bin/env bash
# ptxas_gate.sh on canned ptxas -v reports (the format nvcc 13.0 prints): it passes a clean
# report and sm_90a spills when only sm_120f is gated, and fails, naming the kernel, on an
# sm_120f spill (an entry, or a function listed before the first entry) and on an ignored
# setmaxnreg of any architecture.
set -uo pipefail
gate=${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-__main__}/tools/cuda/ptxas_gate.sh
[[ -x $gate ]] || gate=$(dirname "$0")/ptxas_gate.sh
tmp=${TEST_TMPDIR:-$(mktemp -d)}
failures=0

# block ARCH STORES LOADS [ENTRY]: one ptxas run with one entry function.
block() {
  local entry=${4:-_Z6kernelPf}
  cat <<REPORT
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '$entry' for '$1'
ptxas info    : Function properties for $entry
    8 bytes stack frame, $2 bytes spill stores, $3 bytes spill loads
ptxas info    : Used 168 registers, used 1 barriers, 8 bytes cumulative stack size, 101376 bytes smem
ptxas info    : Compile time = 12.000 ms
REPORT
}

# expect NAME RC REPORT_FILE [TEXT]: the gate exits RC and, if given, prints TEXT.
expect() {
  local out rc
  out=$("$gate" "$3" kernels/example.cu sm_120f 2>&1)
  rc=$?
  if [[ $rc -ne $2 ]]; then
    echo "FAIL $1: exit $rc, expected $2; output:"
    echo "$out"
    failures=$((failures + 1))
  elif [[ -n ${4:-} && $out != *"$4"* ]]; then
    echo "FAIL $1: output lacks '$4':"
    echo "$out"
    failures=$((failures + 1))
  else
    echo "ok   $1"
  fi
}

{ block sm_90a 296 352; block sm_120f 0 0; } >"$tmp/clean.txt"
expect "sm_90a spills are not gated" 0 "$tmp/clean.txt"

{ block sm_90a 0 0; block sm_120f 16 24 _ZN2h37kernels6KernelEv; } >"$tmp/spill.txt"
expect "an sm_120f spill fails, the kernel named" 1 "$tmp/spill.txt" \
  "sm_120f: h3::kernels::Kernel() spills: 16 bytes spill stores, 24 bytes spill loads"

{ block sm_120f 0 4; } >"$tmp/loads.txt"
expect "spill loads alone fail" 1 "$tmp/loads.txt" "0 bytes spill stores, 4 bytes spill loads"

{
  echo "ptxas info    : 0 bytes gmem"
  echo "ptxas info    : Function properties for _Z6helperv"
  echo "    16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads"
  block sm_120f 0 0 | tail -n +2
} >"$tmp/callee.txt"
expect "a function before the first entry takes the block's arch" 1 "$tmp/callee.txt" \
  "sm_120f: helper() spills: 8 bytes spill stores"

{
  block sm_90a 0 0
  echo "ptxas info    : (C7506) Potential Performance Loss: 'setmaxnreg' ignored to maintain compatibility into 'extern' call."
} >"$tmp/c7506.txt"
expect "C7506 fails on any arch" 1 "$tmp/c7506.txt" "sm_90a: ptxas ignored setmaxnreg: (C7506)"

{
  block sm_120f 0 0
  echo "ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to determine register count at entry."
} >"$tmp/c7508.txt"
expect "the same words under another code fail" 1 "$tmp/c7508.txt" "(C7508)"

if ((failures)); then
  echo "$failures case(s) failed"
  exit 1
fi
echo "all cases passed"
