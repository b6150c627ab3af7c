#!/bin/bash
# Turns the benchmark's CSV (--benchmark_out=x.csv --benchmark_out_format=csv) into a PNG:
# left, TFLOP/s of the GEMM pipelines against M; right, time per call (ms) of every contender.
#   harness/bench/plot.sh bench.csv [bench.png]
set -euo pipefail
csv=${1:?usage: plot.sh bench.csv [out.png]}
png=${2:-${csv%.csv}.png}
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One data file per contender: "M ms TFLOPs", from the rows named "<contender>/M:<m>/..." that did
# not fail; with --benchmark_repetitions, only the _median aggregate rows (the others and the
# single repetitions are skipped). Columns are found by name in the header.
awk -F, -v dir="$tmp" '
  function unq(s) { gsub(/"/, "", s); return s }
  !hdr && unq($1) == "name" { for (i = 1; i <= NF; i++) col[unq($i)] = i; hdr = 1; next }
  hdr {
    name = unq($1); split(name, part, "/")
    if (part[2] !~ /^M:/ || unq($col["error_occurred"]) == "true") next
    if (name ~ /_(mean|stddev|cv)$/) next
    m = substr(part[2], 3)
    row = m " " $col["ms"] " " $col["TFLOPs"]
    if (name ~ /_median$/) median[part[1] SUBSEP m] = row; else plain[part[1] SUBSEP m] = row
  }
  END {
    for (k in plain) if (!(k in median)) median[k] = plain[k]
    for (k in median) { split(k, kk, SUBSEP); print median[k] >> (dir "/" kk[1] ".dat") }
  }' "$csv"
for f in "$tmp"/*.dat; do [[ -f $f ]] && sort -n -o "$f" "$f"; done
ls "$tmp"/*.dat >/dev/null 2>&1 || { echo "plot.sh: no benchmark rows in $csv" >&2; exit 1; }
{
  echo "set terminal pngcairo size 1400,560 noenhanced"
  echo "set output '$png'"
  echo "set multiplot layout 1,2 title 'minimax_h3_nvfp4_out_proj (N=5376, K=7168)'"
  echo "set logscale x 2; set key left top; set grid; set xlabel 'M (tokens)'"
  echo "set ylabel 'TFLOP/s'; set title 'GEMM throughput'"
  plot="plot"
  for f in "$tmp"/*.dat; do
    n=$(basename "$f" .dat)
    case $n in copy|quantize) continue ;; esac
    plot="$plot '$f' using 1:3 with linespoints title '$n',"
  done
  echo "${plot%,}"
  echo "set logscale y 10; set ylabel 'ms per call'; set title 'Time per call'"
  plot="plot"
  for f in "$tmp"/*.dat; do
    plot="$plot '$f' using 1:2 with linespoints title '$(basename "$f" .dat)',"
  done
  echo "${plot%,}"
  echo "unset multiplot"
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
echo "wrote $png"
