#!/bin/bash
# old-vs-new.sh - one distcomm build against another (a refactor must not
# cost speed): 2 ranks on this host, the two builds in turns (ROUNDS), over
# shared memory and over TCP (DISTCOMM_SHM=0), with bench/peers/compare's sizes
# and ops; compare.py makes the table (ratio = old's time / new's time, so
# 1.00x = the same). Ends with the host's memcpy rate (membw.c).
#
# Usage: OLD=dir NEW=dir bench/ab/old-vs-new.sh [RESULTS_DIR]
#   OLD, NEW   Release builds holding distcomm-perf and distcomm-launch
#   ROUNDS=3   turns per build and mode;  RUNS=5  timed runs per size
#   PIN=1      each rank on a CPU of its own (bench/tools/pin-rank.sh), the
#              same for both builds: unpinned, loopback TCP is bimodal here
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
results=${1:-$repo/bench/results/$(date +%Y%m%d-%H%M%S)-old-vs-new}
rounds=${ROUNDS:-3}
runs=${RUNS:-5}
sizes=8,1K,64K,1M,16M,128M
: "${OLD:?set OLD= to the old build}" "${NEW:?set NEW= to the new build}"

exe() { find "$1" -type f -name "$2" -perm -u+x -not -path '*/CMakeFiles/*' 2>/dev/null | head -n 1; }
for b in "$OLD" "$NEW"; do # fail now, not after a round of failed runs
  [ -n "$(exe "$b" distcomm-launch)" ] && [ -n "$(exe "$b" distcomm-perf)" ] ||
    { echo "old-vs-new.sh: no distcomm-launch and distcomm-perf under $b (build it)" >&2; exit 2; }
done

one() { # build label mode round
  local shm=1
  [ "$3" = tcp ] && shm=0
  local pin=()
  [ "${PIN:-0}" = 1 ] && pin=("$repo/bench/tools/pin-rank.sh")
  DISTCOMM_SHM=$shm "$(exe "$1" distcomm-launch)" -n 2 -- "${pin[@]}" "$(exe "$1" distcomm-perf)" \
    --peers-format -c 1 -R "$runs" -l "$sizes" \
    -t all_reduce,all_gather,reduce_scatter,sendrecv >"$results/$2-$3.$4.txt"
}

mkdir -p "$results"
for mode in shm tcp; do
  for ((i = 1; i <= rounds; i++)); do
    echo "# $mode round $i" >&2
    one "$NEW" new "$mode" "$i"
    one "$OLD" old "$mode" "$i"
  done
  args=()
  for ((i = 1; i <= rounds; i++)); do
    args+=("new=$results/new-$mode.$i.txt" "old=$results/old-$mode.$i.txt")
  done
  echo "### $mode (ratio = old time / new time)"
  /usr/bin/python3 "$repo/bench/tools/compare.py" "${args[@]}"
done | tee "$results/table.txt"
gcc -O3 -march=native -o "$results/membw" "$repo/../shared/bench/peers/membw.c"
"$results/membw" 128 15 | tee -a "$results/table.txt"
rm -f "$results/membw"
