#!/bin/bash
# small-ops.sh - two distcomm builds' small ops (8 B and 1 KiB all_reduce,
# all_gather, reduce_scatter, pingpong; 2 ranks over shared memory) in ns
# with a decimal, in turns: where old-vs-new.sh's microseconds with two
# decimals are 10 ns steps. small_ops.c is compiled against each build's
# static library (libdistcomm.a, built here if missing) and started by that
# build's launcher. Table: the median of the turns, ratio old/new (above
# 1: new is faster). Ends with the host's copy rate and line round trip.
#
# Usage: OLD=dir NEW=dir bench/ab/small-ops.sh [RESULTS_DIR]
#   OLD, NEW   Release build folders (CMake) of the two trees
#   TURNS=10   turns per build;  CALLS=200000 calls per timing, best of 5
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
results=${1:-$repo/bench/results/$(date +%Y%m%d-%H%M%S)-small-ops}
turns=${TURNS:-10}
: "${OLD:?set OLD= to the old build}" "${NEW:?set NEW= to the new build}"
mkdir -p "$results"

for side in old new; do
  build=$OLD
  [ "$side" = new ] && build=$NEW
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
  [ -n "$src" ] || { echo "small-ops.sh: $build is not a CMake build folder" >&2; exit 2; }
  cmake --build "$build" --target distcomm_static distcomm-launch >/dev/null
  lib=$(find "$build" -name libdistcomm.a -not -path '*/CMakeFiles/*' | head -n 1)
  gcc -O2 -I"$src/include" -o "$results/small_ops-$side" \
    "$repo/bench/ab/small_ops.c" "$lib" -lpthread -ldl -lm
  find "$build" -type f -name distcomm-launch -perm -u+x \
    -not -path '*/CMakeFiles/*' | head -n 1 >"$results/launch-$side"
done

for ((i = 1; i <= turns; i++)); do
  for side in new old; do
    DISTCOMM_SHM=1 "$(cat "$results/launch-$side")" -n 2 -- \
      "$results/small_ops-$side" "${CALLS:-200000}" 5 >>"$results/$side.txt"
  done
done
rm -f "$results"/small_ops-* "$results"/launch-*

/usr/bin/python3 - "$results" "$turns" <<'EOF' | tee "$results/table.txt"
import statistics, sys
out, turns = sys.argv[1], sys.argv[2]
cells = {}
for side in ("old", "new"):
    for line in open(f"{out}/{side}.txt"):
        cell, ns = line.split()
        cells.setdefault(cell, {}).setdefault(side, []).append(float(ns))
print(f"# ns per call, median of {turns} turns (each the best of 5 timings); "
      "ratio = old / new")
print(f"{'cell':8} {'old':>8} {'new':>8} {'ratio':>7}")
for cell, v in cells.items():
    o, n = statistics.median(v["old"]), statistics.median(v["new"])
    print(f"{cell:8} {o:8.1f} {n:8.1f} {o / n:6.2f}x")
EOF
# the machine beside the table: its copy rate, and where the VM put the two
# vCPUs (a cache line's round trip: ~100 ns apart, ~250+ across dies)
cmake --build "$NEW" --target bench-copy-rate >/dev/null
rate=$(find "$NEW" -type f -name bench-copy-rate -perm -u+x | head -n 1)
{ "$rate" 128 5 | tail -n 1; "$rate" line | tail -n 1; } | tee -a "$results/table.txt"
