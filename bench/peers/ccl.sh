#!/bin/bash
# ccl.sh - distcomm's all_reduce beside Intel oneCCL's (bench/peers/ccl_bench.cc),
# N ranks on this host (default 2), in turns, in the columns of mpi_bench.c and
# distcomm-perf -P, over TCP and over shared memory.
#   bench/peers/ccl.sh [OUTDIR]    (BUILD=build, N=2, RUNS=5, ROUNDS=3, MAX=128M bytes,
#                                   ITERS=200: oneCCL's iterations per size at most)
# CCL_TUNE (default below) sets how oneCCL's threads wait: by default its
# caller and worker poll without sleeping, and on 2 cores shared with other
# jobs an 8 B all_reduce then took 3-33 ms (CCL_TUNE= to see it).
# oneCCL comes from PyPI (oneccl-cpu-devel 2022.2.0: headers and a static CPU
# libccl.a; ~38 MiB of wheels) into $BUILD/venv-oneccl; ccl_bench links it with
# Debian's hwloc (libhwloc-dev). Transports: tcp = oneCCL's OFI ATL with
# libfabric's tcp provider (Debian's libfabric1, which libccl dlopens) against
# DISTCOMM_SHM=0; shm = the same with CCL_ATL_SHM=1 (libfabric's shm provider
# between local ranks) against distcomm's shared memory. Both are started by
# distcomm-launch; oneCCL's ranks meet through its own key-value store,
# whose address rank 0 writes to a file (no MPI). Writes OUTDIR/{distcomm,ccl}-
# {tcp,shm}.R.txt and OUTDIR/ccl-table.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${BUILD:-$here/../../build}" && pwd)
out=${1:-$here/../results/$(date +%F)/ccl}
n=${N:-2} runs=${RUNS:-5} rounds=${ROUNDS:-3} max=${MAX:-134217728} iters=${ITERS:-200}
tune=${CCL_TUNE-CCL_WORKER_WAIT=1 CCL_SPIN_COUNT=100 CCL_YIELD=sched_yield}
mkdir -p "$out"
venv=$build/venv-oneccl
if [ ! -x "$venv/bin/pip" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --no-deps oneccl-cpu-devel==2022.2.0
fi
ccl=$(echo "$venv"/lib/python3*/site-packages/../../..)
[ -f "$ccl/include/oneapi/ccl.hpp" ] || { echo "ccl.sh: no oneCCL headers under $ccl" >&2; exit 1; }
bin=$build/ccl_bench
if [ ! -x "$bin" ] || [ "$here/ccl_bench.cc" -nt "$bin" ] || [ "$here/schedule.h" -nt "$bin" ]; then
  g++ -O2 -std=c++17 -I"$ccl/include" "$here/ccl_bench.cc" -o "$bin" \
    "$ccl/lib/ccl/cpu/lib/libccl.a" -lhwloc -lpthread -ldl -lrt
fi
launch=$build/bin/distcomm-launch
sizes=8,1K,64K,1M,16M,128M
for link in tcp shm; do
  shm=0; [ "$link" = shm ] && shm=1
  for r in $(seq "$rounds"); do
    DISTCOMM_SHM=$shm "$launch" -n "$n" -- "$build/bin/distcomm-perf" -P -R "$runs" -l "$sizes" \
      -e "$max" >"$out/distcomm-$link.$r.txt"
    kvs=$(mktemp -u "$out/.kvs.XXXXXX") # fresh: a stale address would be dialled
    # shellcheck disable=SC2086 # tune is a list of assignments
    env $tune CCL_ATL_TRANSPORT=ofi FI_PROVIDER=tcp CCL_ATL_SHM=$shm CCL_LOG_LEVEL=error \
      CCL_KVS_CONNECTION_TIMEOUT=60 CCL_BENCH_KVS=$kvs timeout 1200 "$launch" -n "$n" -- \
      sh -c 'CCL_LOCAL_RANK=$LOCAL_RANK CCL_LOCAL_SIZE=$LOCAL_WORLD_SIZE exec "$0" "$@"' \
      "$bin" "$runs" "$max" "$iters" >"$out/ccl-$link.$r.txt"
  done
done
# time_us medians over the rounds, side by side
python3 - "$out" "$rounds" "$n" <<'PY' | tee "$out/ccl-table.txt"
import statistics, sys
out, rounds, n = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def rows(path):
    return {int(f[1]): float(f[3]) for f in (l.split() for l in open(path))
            if len(f) >= 7 and f[0] in ("allreduce", "all_reduce") and f[1].isdigit()}
print(f"all_reduce float32 sum, {n} ranks; time_us = median over {rounds} rounds; ratio = oneCCL / distcomm")
print(f"{'bytes':>10} {'tcp:distcomm':>13} {'oneCCL':>10} {'ratio':>7} {'shm:distcomm':>13} {'oneCCL':>10} {'ratio':>7}")
med = {}
for side in ("distcomm", "ccl"):
    for link in ("tcp", "shm"):
        got = [rows(f"{out}/{side}-{link}.{r}.txt") for r in range(1, rounds + 1)]
        med[side, link] = {s: statistics.median(g[s] for g in got if s in g) for s in got[0]}
for s in sorted(med["distcomm", "tcp"]):
    cells = []
    for link in ("tcp", "shm"):
        d, c = med["distcomm", link].get(s), med["ccl", link].get(s)
        cells += [f"{d:>13.1f}", f"{c:>10.1f}" if c else f"{'-':>10}",
                  f"{c / d:>6.2f}x" if c else f"{'-':>7}"]
    print(f"{s:>10} " + " ".join(cells))
PY
