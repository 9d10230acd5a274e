#!/bin/bash
# tcp-vs-peers.sh - distcomm over TCP beside Open MPI (TCP), MPICH (TCP) and Gloo,
# 2 ranks on this host, measured in the same run (SPEC.md section 6).
#
# Usage: bench/tcp-vs-peers.sh [RESULTS_DIR]     (default bench/results/<date>/)
# Environment:
#   BUILD=dir        distcomm build (default <repo>/build-release; configured
#                    as Release and built when missing or out of date)
#   PEERS=path       run-peers.sh (default <repo>/../shared/bench/peers/run-peers.sh)
#   PEERS_BUILD=dir  passed on to run-peers.sh (reuse its compiled peers)
#   LAUNCH=path      a distcomm-launch to use instead of the build's
#   PEER_LIST="ompi-tcp mpich-tcp gloo"   peers to run
#   RUNS=5           timed runs per size for every side (median reported)
#   SKIP_PEERS=1     reuse RESULTS_DIR/peers.txt from an earlier run
#
# Writes to RESULTS_DIR: distcomm.txt (rows in the peers' columns),
# distcomm-sweep.txt (all_reduce 8 B .. 128 MiB by factors of 2, nccl-tests
# columns), peers.txt (run-peers.sh's output), table.txt (the comparison,
# also printed). These machines are noisy: compare figures of one run only.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
results=${1:-$repo/bench/results/$(date +%Y%m%d-%H%M%S)}
build=${BUILD:-$repo/build-release}
peers=${PEERS:-$repo/../shared/bench/peers/run-peers.sh}
peer_list=${PEER_LIST:-ompi-tcp mpich-tcp gloo}
runs=${RUNS:-5}
sizes=8,1K,64K,1M,16M,128M # the peers' sizes (mpi_bench.c), so rows pair up

die() { echo "tcp-vs-peers: $*" >&2; exit 1; }

build_distcomm() {
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null || die "cmake configure failed"
  fi
  local targets="distcomm-perf"
  [ -n "${LAUNCH:-}" ] || targets="$targets distcomm-launch"
  # shellcheck disable=SC2086 # targets is a word list on purpose
  cmake --build "$build" -j "$(nproc)" --target $targets >/dev/null \
    || die "build failed (cmake --build $build)"
}

# The executable of a target, wherever the build put it.
find_exe() {
  local hit
  hit=$(find "$build" -type f -name "$1" -perm -u+x -not -path '*/CMakeFiles/*' | head -n 1)
  [ -n "$hit" ] || die "no $1 under $build"
  echo "$hit"
}

# DISTCOMM_SHM=0 keeps both ranks on TCP over 127.0.0.1 once shared memory
# exists; the launcher passes the environment on to local ranks.
run_distcomm() {
  local launch perf
  launch=${LAUNCH:-$(find_exe distcomm-launch)}
  perf=$(find_exe distcomm-perf)
  echo "# distcomm: $launch -n 2 -- $perf (DISTCOMM_SHM=0)" >&2
  DISTCOMM_SHM=0 "$launch" -n 2 -- "$perf" --peers-format -c 1 -R "$runs" -l "$sizes" \
    -t all_reduce,all_gather,reduce_scatter,sendrecv >"$results/distcomm.txt" \
    || die "distcomm-perf failed (see $results/distcomm.txt)"
  DISTCOMM_SHM=0 "$launch" -n 2 -- "$perf" -c 1 -R 3 -b 8 -e 128M -f 2 -t all_reduce \
    >"$results/distcomm-sweep.txt" || die "distcomm-perf sweep failed"
}

run_peers() {
  [ -x "$peers" ] || [ -f "$peers" ] || die "no run-peers.sh at $peers (set PEERS=)"
  echo "# peers: $peers $runs $peer_list" >&2
  # shellcheck disable=SC2086 # peer_list is a word list on purpose
  bash "$peers" "$runs" $peer_list >"$results/peers.txt" || die "run-peers.sh failed"
}

mkdir -p "$results"
build_distcomm
run_distcomm
if [ "${SKIP_PEERS:-0}" = 1 ] && [ -s "$results/peers.txt" ]; then
  echo "# peers: reusing $results/peers.txt" >&2
else
  run_peers
fi
python3 "$repo/bench/compare.py" "distcomm=$results/distcomm.txt" "$results/peers.txt" \
  | tee "$results/table.txt"
echo "# raw outputs and table in $results" >&2
