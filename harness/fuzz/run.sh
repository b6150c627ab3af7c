#!/usr/bin/env bash
# Builds a fuzzer with clang's libFuzzer, ASan and UBSan, and runs it for SECONDS (default 60)
# from its committed seed corpus. Exit status 0 only when the run ends with no crash, leak,
# timeout or sanitizer report; prints the execution count.
#   harness/fuzz/run.sh [SECONDS] [npy|tune_cache]
# npy (the default): the .npy reader (npy_fuzzer.cc + harness/npy*.cc), seeds in corpus/.
# tune_cache: the tuning cache's reader and writer (tune_cache_fuzzer.cc + kernels/tuning/tune_cache.cc
# over nlohmann-json), seeds in corpus_tune_cache/.
# On a fresh Debian 12 machine it installs clang, the compiler-rt runtimes and pkg-config
# (as root; otherwise it prints the apt-get command and stops). Abseil comes from libabsl-dev and
# nlohmann-json from nlohmann-json3-dev, which ./bazelw installs.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
[[ $secs =~ ^[0-9]+$ && $secs -gt 0 ]] || { echo "fuzz: SECONDS must be a positive integer, got '$secs'" >&2; exit 2; }
target=${2:-npy}
case $target in
  npy) sources=(harness/fuzz/npy_fuzzer.cc harness/npy.cc harness/npy_write.cc)
       dict=harness/fuzz/npy.dict; seeds=harness/fuzz/corpus; max_len=4096 ;;
  tune_cache) sources=(harness/fuzz/tune_cache_fuzzer.cc kernels/tuning/tune_cache.cc)
       dict=harness/fuzz/tune_cache.dict; seeds=harness/fuzz/corpus_tune_cache; max_len=8192 ;;
  *) echo "fuzz: TARGET must be npy or tune_cache, got '$target'" >&2; exit 2 ;;
esac

PACKAGES=(clang libclang-rt-dev pkg-config libabsl-dev nlohmann-json3-dev)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "fuzz: installing Debian packages: ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  else
    echo "fuzz: missing Debian packages: ${missing[*]}" >&2
    echo "fuzz: run:  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

out=${H3_FUZZ_OUT:-$(mktemp -d)}
mkdir -p "$out/corpus"
flags=(-std=c++17 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
  -fno-sanitize-recover=all -I.)
echo "fuzz: building $out/${target}_fuzzer (clang++ $(clang++ -dumpversion), libFuzzer + ASan + UBSan)"
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
clang++ "${flags[@]}" "${sources[@]}" \
  $(pkg-config --cflags --libs absl_status absl_statusor absl_strings absl_str_format) \
  -o "$out/${target}_fuzzer"

# The fuzzer rewrites one scratch file per input: in memory where /dev/shm allows.
scratch=$(mktemp -d -p "$([[ -d /dev/shm && -w /dev/shm ]] && echo /dev/shm || echo "$out")")
trap 'rm -rf "$scratch"' EXIT
log=$out/fuzz.log
echo "fuzz: running ${secs}s from $seeds ($(ls "$seeds" | wc -l) seeds); log $log"
rc=0
H3_FUZZ_SCRATCH_DIR=$scratch ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  "$out/${target}_fuzzer" -max_total_time="$secs" -print_final_stats=1 -timeout=10 \
  -max_len="$max_len" -dict="$dict" -artifact_prefix="$out/" "$out/corpus" "$seeds" \
  >"$log" 2>&1 || rc=$?
execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -n1)
if ((rc != 0)) || grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$log"; then
  tail -n 60 "$log"
  echo "fuzz: FAILED (exit $rc) after ${execs:-?} executions; the input is in $out/ (crash-*, leak-*, timeout-*)"
  exit 1
fi
echo "fuzz: ${execs:-?} executions in ${secs}s, corpus $(ls "$out/corpus" | wc -l) new inputs;" \
  "no crash, leak or sanitizer report"
[[ -z ${H3_FUZZ_OUT:-} ]] && rm -rf "$out"
exit 0
