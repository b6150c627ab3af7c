#!/usr/bin/env bash
# sass_report.sh OBJ [ARCH [MMA_REGEX]]: per kernel of OBJ (object, cubin or executable), the
# instruction mix of one iteration of its innermost MMA loop (tools/device/sass_report.py says
# what each column counts). ARCH defaults to sm_120f, MMA_REGEX to OMMA (HMMA for sm_90a).
# cuobjdump is ${CUOBJDUMP:-cuobjdump}, e.g. CUOBJDUMP=/work/.cutools/cuobjdump off the device.
set -euo pipefail
if [[ $# -lt 1 || ! -f $1 ]]; then
  echo "usage: $0 OBJ [ARCH [MMA_REGEX]]: OBJ must be an existing file, got '${1:-}'" >&2
  exit 2
fi
obj=$1 arch=${2:-sm_120f}
mma=${3:-$([[ $arch == sm_90* ]] && echo HMMA || echo OMMA)}
sass=$("${CUOBJDUMP:-cuobjdump}" -sass -arch "$arch" "$obj")
echo "# $(basename "$obj") $arch"
python3 "$(dirname "$0")/sass_report.py" --mma "$mma" <<<"$sass"
