#!/bin/bash
# shm-ab.sh - two distcomm builds, A and B, cell by cell in short runs over
# shared memory (2 ranks): for each pair, each op and size, one run of each
# build back to back, which one goes first alternating, so both see the same
# spell of a shared host. Prints per cell the median over pairs of
# A's time / B's time (above 1: B is faster), and each build's median time.
#
# Usage: A=build B=build bench/ab/shm-ab.sh RESULTS_DIR
#   PAIRS=10  CELLS="all_gather:64K all_gather:1M ..." (op:size)  RUNS=1
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
results=${1:?usage: A=build B=build bench/ab/shm-ab.sh RESULTS_DIR}
: "${A:?set A= to a build}" "${B:?set B= to a build}"
pairs=${PAIRS:-10}
runs=${RUNS:-1}
cells=${CELLS:-all_gather:64K all_gather:1M all_gather:16M sendrecv:64K sendrecv:1M sendrecv:16M all_reduce:1M all_reduce:16M}
mkdir -p "$results"
raw=$results/raw.txt
: >"$raw"
one() { # build op size -> time_us
  DISTCOMM_SHM=1 timeout 300 "$1/bin/distcomm-launch" -n 2 -- "$1/bin/distcomm-perf" \
    --peers-format -c 0 -R "$runs" -t "$2" -l "$3" | awk '$2 ~ /^[0-9]+$/ { print $4 }'
}
for ((p = 1; p <= pairs; p++)); do
  for cell in $cells; do
    op=${cell%%:*} size=${cell#*:}
    load=$(cut -d' ' -f1 /proc/loadavg)
    if ((p % 2)); then a=$(one "$A" "$op" "$size"); b=$(one "$B" "$op" "$size")
    else b=$(one "$B" "$op" "$size"); a=$(one "$A" "$op" "$size"); fi
    echo "$p $op $size $a $b $load" >>"$raw"
  done
done
/usr/bin/python3 - "$raw" <<'PY' | tee "$results/table.txt"
import statistics as S, sys
cells = {}
for line in open(sys.argv[1]):
    p, op, size, a, b, load = line.split()
    cells.setdefault((op, size), []).append((float(a), float(b), float(load)))
print("%-11s %6s %5s %12s %12s %9s %14s" % ("op", "size", "pairs", "A us", "B us", "A/B", "load (median)"))
for (op, size), v in cells.items():
    print("%-11s %6s %5d %12.2f %12.2f %8.2fx %14.1f" % (op, size, len(v),
          S.median(x[0] for x in v), S.median(x[1] for x in v),
          S.median(x[0] / x[1] for x in v), S.median(x[2] for x in v)))
PY
