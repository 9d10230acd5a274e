#!/bin/bash
# shm-turns.sh - distcomm builds in turns over shared memory, 2 ranks: each
# round runs every build once, so a slow spell of this shared host falls on
# all of them alike; the table (bench/tools/turns.py) gives each build's median
# time and, per build, the median over rounds of that round's ratio
# first build's time / its time (above 1: faster than the first build).
# Ends with the host's memcpy rate (membw.c) and the load averages seen.
#
# Usage: bench/ab/shm-turns.sh RESULTS_DIR LABEL=BUILD [LABEL=BUILD ...]
#   BUILD       a build holding bin/distcomm-perf and bin/distcomm-launch
#   ROUNDS=5    turns;  RUNS=3  timed runs per size (median)
#   OPS=all_gather,sendrecv,all_reduce   SIZES=1K,64K,256K,1M,4M,16M,128M
#   Extra environment (DISTCOMM_CMA=0 ...) passes on to every build.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
results=${1:?usage: bench/ab/shm-turns.sh RESULTS_DIR LABEL=BUILD ...}
shift
[ $# -ge 1 ] || { echo "usage: bench/ab/shm-turns.sh RESULTS_DIR LABEL=BUILD ..." >&2; exit 2; }
rounds=${ROUNDS:-5}
runs=${RUNS:-3}
ops=${OPS:-all_gather,sendrecv,all_reduce}
sizes=${SIZES:-1K,64K,256K,1M,4M,16M,128M}
mkdir -p "$results"
labels=()
for lb in "$@"; do labels+=("${lb%%=*}"); done
for ((i = 1; i <= rounds; i++)); do
  for lb in "$@"; do
    l=${lb%%=*} b=${lb#*=}
    echo "# $(date -u +%T) round $i $l load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$results/log.txt" >&2
    DISTCOMM_SHM=1 timeout 500 "$b/bin/distcomm-launch" -n 2 -- "$b/bin/distcomm-perf" \
      --peers-format -c 1 -R "$runs" -t "$ops" -l "$sizes" >"$results/$l.$i.txt"
  done
done
{
  echo "# bench/ab/shm-turns.sh $results $* (ROUNDS=$rounds RUNS=$runs)"
  /usr/bin/python3 "$repo/bench/tools/turns.py" "$results" "${labels[@]}"
  echo "# load averages (1, 5, 15 min) at each run:"
  sed 's/^# /#   /' "$results/log.txt"
  gcc -O3 -march=native -o "$results/membw" "$repo/../shared/bench/peers/membw.c"
  "$results/membw" 128 15 | sed 's/^/# /'
  rm -f "$results/membw"
} | tee "$results/table.txt"
