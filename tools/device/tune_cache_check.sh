#!/usr/bin/env bash
# The bench's --write_tune_cache on this GPU: it times the registry's configs at a few M, writes a
# scratch tuning cache and reads it back with kAuto's C++ reader; where the Python package is
# installed (PY_PKG, default .dev/py), Python's tuning.py reads the same file and must pick the
# same configs. Last line: "TUNE CACHE PASSED ..." or "TUNE CACHE FAILED: why".
#   B=.dev/bin OUT=/tmp/h3_checks tools/device/tune_cache_check.sh
set -uo pipefail
B=${B:-.dev/bin}
OUT=${OUT:-/tmp/h3_checks}
mkdir -p "$OUT"
ms=1,128,4096
cache=$OUT/bench_tune_cache.json
log=$OUT/tune_cache_bench.out
rm -f "$cache"
fail() { echo "TUNE CACHE FAILED: $*"; exit 1; }

"$B/bench" --bench_m=$ms --benchmark_filter='^fused(_128x256_lockstep|_128x256|_128x128)?/' \
  --write_tune_cache="$cache" >"$log" 2>&1
rc=$?
cat "$log"
((rc == 0)) || fail "the bench exited $rc"
cpp=$(grep -o 'kAuto reads back:.*' "$log" | sed 's/^kAuto reads back://')
[[ -n $cpp ]] || fail "the bench did not say what kAuto reads back"
cat "$cache"

pkg=${PY_PKG:-.dev/py}
if [[ ! -f $pkg/minimax_h3_nvfp4/__init__.py ]]; then
  echo "TUNE CACHE PASSED (bench wrote $cache; C++ reads back:$cpp; no Python package in $pkg:" \
    "not compared)"
  exit 0
fi
py=$(PYTHONPATH=$pkg${PYTHONPATH:+:$PYTHONPATH} python3 - "$cache" "$ms" <<'PY'
import sys
from minimax_h3_nvfp4 import _native, tuning
path, ms = sys.argv[1], [int(v) for v in sys.argv[2].split(",")]
props = _native.device_properties(0)
cache = tuning.Cache(path)
out = []
for m in ms:
    name, how = cache.choose(props, m, 5376, 7168, "faithful")
    if how != "tuned":
        sys.exit("M=%d is not tuned for %s (%s)" % (m, tuning.device_key(props), name))
    out.append(" M=%d %s" % (m, name))
print("".join(out))
PY
) || fail "Python did not read the bench's cache: $py"
echo "Python reads back:$py"
[[ $py == "$cpp" ]] || fail "C++ reads back:$cpp; Python reads back:$py"
echo "TUNE CACHE PASSED (bench wrote $cache; C++ and Python read back the same winners:$cpp)"
