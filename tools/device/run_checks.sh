#!/usr/bin/env bash
# The GPU checks of the project on one machine, from binaries staged by tools/device/stage.sh:
# the GPU tests, the sweep with both sm_90 emulations (one run on sm_12x), compute-sanitizer,
# the SASS OMMA count. Prints one line per check; logs go to $OUT (default /tmp/h3_checks).
# Run from the repository root: tools/device/run_checks.sh [quick]
set -u
B=${B:-.dev/bin}
OUT=${OUT:-/tmp/h3_checks}
mkdir -p "$OUT"
export GTEST_COLOR=no
# tile=auto reads a tuning cache: never the machine's own ($HOME/.cache) during the checks.
export MINIMAX_H3_NVFP4_TUNE_CACHE=${MINIMAX_H3_NVFP4_TUNE_CACHE:-$OUT/no_tune_cache.json}
failures=0

check() {  # check NAME CMD...: runs CMD, prints rc, seconds and the log's verdict line
  local name=$1; shift
  local t0=$(date +%s%N)
  "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  local dt=$(( ($(date +%s%N) - t0) / 1000000 ))
  local verdict=$(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|FAILED TEST|SWEEP (PASSED|FAILED)|ERROR SUMMARY|cases:|OMMA per|[Vv]erdict|TUNE CACHE' \
                  "$OUT/$name.log" | tail -n 2 | tr '\n' ' ')
  ((rc != 0)) && failures=$((failures + 1))
  printf '%-28s rc=%-3d %7d ms  %s\n' "$name" "$rc" "$dt" "$verdict"
}

nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm,power.limit --format=csv,noheader
major=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | cut -d. -f1)

check probe             "$B/probe" --backend=gpu --json="$OUT/probe.json"
# The memory path's latencies (the perf model's TMA latency, queueing and L2 inputs), as a table.
check tma_latency       "$B/tma_latency"
check cuda_smoke        "$B/cuda_smoke_test"
check unit_kernels      "$B/unit_kernels_test"
check out_proj          "$B/out_proj_test"
check out_proj_smooth   "$B/out_proj_smooth_test"
check out_proj_branch   "$B/out_proj_branch_test"
check out_proj_capture  "$B/out_proj_capture_test"
check timing_variants   "$B/timing_variants_test"
check stall             "$B/stall_test"
check stress            "$B/stress_test"
check register_split    "$B/register_split_gpu_test"
# The GPU weight quantizer against the CPU one, bit for bit (one line per case), and its time.
check weight_quant      "$B/weight_quant_test"
grep -E '^weight_quant (timing|.*: FAIL)' "$OUT/weight_quant.log"
check tune_cache_gpu    "$B/tune_cache_gpu_test"
# The bench times the registry's configs and writes a tuning cache; C++ (and Python, where the
# package is installed in .dev/py) read the same winners back (tools/device/tune_cache_check.sh).
check tune_cache_bench  env B="$B" OUT="$OUT" tools/device/tune_cache_check.sh

# tools_test runs the tools as <root>/harness/<tool> (sweep and probe in their own folders,
# harness/sweep/sweep and harness/probe/probe) and reads <root>/testdata.
root=$(mktemp -d); mkdir -p "$root/harness/sweep" "$root/harness/probe"
cp "$B/op" "$B/quantize_weight" "$root/harness/"; cp "$B/sweep" "$root/harness/sweep/"
cp "$B/probe" "$root/harness/probe/"
ln -s "$PWD/testdata" "$root/testdata"
check tools             env H3_REPO_ROOT="$root" "$B/tools_test"
check sweep_faithful    "$B/sweep" --sm90_emulation=faithful --report="$OUT/sweep_faithful.json"
if [[ $major == 9 ]]; then
  check sweep_fast      "$B/sweep" --sm90_emulation=fast --report="$OUT/sweep_fast.json"
fi
if [[ ${1:-} != quick ]]; then
  # The sanitizers slow the kernel by orders of magnitude: its waits' bound (kernels/device/stall.h)
  # raised so that a slow correct run is not taken for a stall.
  export MINIMAX_H3_NVFP4_WAIT_LIMIT_MS=600000
  # ReusedFlagsLeftZero: the kernel's reset of its ready flags (ready_flags.h ResetAtExit). The
  # patterns match every config's case, the staged one's shared-memory hand-off among them.
  # three_tiles_per_cta: the staged config's t tile through a second phase of each parity.
  cases='*m129*:*n128*:*two_tiles_per_cta_faithful*:*three_tiles_per_cta_faithful*:*ReusedFlagsLeftZero*'
  for tool in memcheck racecheck synccheck; do
    check "sanitizer_$tool" compute-sanitizer --tool "$tool" --error-exitcode 1 \
      "$B/out_proj_test" --gtest_filter="$cases"
    # The smoothed instances (act_smooth read per block; non-finite factors refused).
    check "sanitizer_smooth_$tool" compute-sanitizer --tool "$tool" --error-exitcode 1 \
      "$B/out_proj_smooth_test" --gtest_filter='*special_extreme_faithful:*gauss_two_tiles_per_cta_fast*:*Checked*'
    # The branch's instances (partials written by the quantizers, read by the epilogues).
    check "sanitizer_branch_$tool" compute-sanitizer --tool "$tool" --error-exitcode 1 \
      "$B/out_proj_branch_test" --gtest_filter='*gauss_r16_faithful:*special_extreme_r64_fast:*two_tiles_per_cta_r32_faithful:*two_tiles_per_cta_r32_faithful_128x128:*two_tiles_per_cta_r32_faithful_128x256'
  done
  # The weight quantizer's two kernels (its os table and amax reduction in shared memory).
  for tool in memcheck racecheck; do
    check "sanitizer_weight_quant_$tool" compute-sanitizer --tool "$tool" --error-exitcode 1 \
      "$B/weight_quant_test" --gtest_filter='*BitIdenticalToCpuSmall*:*SameErrors*'
  done
  # The latency probe's TMA rings (their mbarriers and swizzled boxes in shared memory).
  check sanitizer_tma_latency_memcheck compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$B/tma_latency"
  # The standalone quantizer (persistent, its os table in shared memory).
  for tool in memcheck racecheck; do
    check "sanitizer_quantize_$tool" compute-sanitizer --tool "$tool" --error-exitcode 1 \
      "$B/unit_kernels_test" --gtest_filter='*Quantize*'
  done
fi
# SASS of each sm_120f kernel instance: its block-scaled MMAs (one stage's k-steps are unrolled,
# so the count is the OMMAs per stage), its setmaxnreg instructions (USETMAXREG: present only
# where ptxas honoured them) and the epilogue's bf16x2 conversions (2 per output pair, unrolled).
# The plain instances (out_proj_launch.pic.o) and the act_smooth ones (out_proj_launch_smoothed.o),
# each its own report (sass*.txt / sass_report*.txt, suffixed _smoothed for the second).
for obj in "$B"/out_proj_launch*.o; do
  [[ -f $obj ]] && command -v cuobjdump >/dev/null || continue
  sfx=$([[ $obj == *smoothed* ]] && echo _smoothed; [[ $obj == *branch* ]] && echo _branch)
  cuobjdump -sass -arch sm_120f "$obj" >"$OUT/sass$sfx.txt" 2>&1 || cuobjdump -sass "$obj" >"$OUT/sass$sfx.txt" 2>&1
  awk '/Function :/ {f=$3} /OMMA.SF.16864.F32.E2M1.E2M1.UE4M3.4X/ {o[f]++} /USETMAXREG/ {r[f]++}
       /F2FP.BF16.F32.PACK_AB/ {b[f]++}
       END {for (f in o) printf "sass: %s: %d OMMA per stage, %d USETMAXREG, %d F2FP.BF16 (epilogue cvt packs, and the smoothing'"'"'s where it smooths)\n", f, o[f], r[f], b[f]}' \
    "$OUT/sass$sfx.txt" | tee -a "$OUT/sass.log"
  # One main-loop iteration per kernel instance (legend in the .txt): sm_120f OMMA printed, the
  # sm_90a emulation's HMMA loop kept in the log.
  if tools/device/sass_report.sh "$obj" sm_120f >"$OUT/sass_report$sfx.txt" 2>&1 &&
     tools/device/sass_report.sh "$obj" sm_90a HMMA >"$OUT/sass_report_sm90a$sfx.txt" 2>&1; then
    grep '^|' "$OUT/sass_report$sfx.txt" | sed "s/^/sass_report$sfx: /"
  else
    failures=$((failures + 1))
    echo "sass_report failed: $(tail -n 3 "$OUT"/sass_report*$sfx.txt | tr '\n' ' ')"
  fi
done
# The standalone quantizer's SASS, per arch (its fast path's instruction count is read from it).
if [[ -f $B/quantize_kernel.o ]] && command -v cuobjdump >/dev/null; then
  cuobjdump -sass "$B/quantize_kernel.o" >"$OUT/quantize_sass.txt" 2>&1
fi
echo "checks failed: $failures"
exit $((failures > 0))
