#!/bin/bash
# mpi-vs-plain.sh - what the MPI backend's wrapping costs: distcomm-perf on
# the "mpi" backend against the same MPI calls made directly (the peers'
# mpi_bench.c), 2 ranks on this host, same launcher, same sizes, same ops.
#
# Usage: bench/peers/mpi-vs-plain.sh [IMPL...]      IMPL: ompi (default), mpich
# Environment:
#   BUILD=dir     distcomm build with distcomm-perf (default <repo>/build-release;
#                 configured as Release and built when missing)
#   PEERS_DIR=dir where mpi_bench.c is (default <repo>/../shared/bench/peers)
#   ROUNDS=5      rounds; each runs plain MPI then distcomm (order alternates)
#   RUNS=3        timed runs per size inside each program (median)
#   OUT=dir       where the raw outputs go (default a temporary directory)
# Prints, per op and size, the median over rounds of each side's time and
# the overhead (distcomm / plain - 1). The machine is shared and noisy: only
# rows of one run compare, and interleaving the two sides is what makes the
# ratio mean something.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$repo/build-release}
peers=${PEERS_DIR:-$repo/../shared/bench/peers}
rounds=${ROUNDS:-5}
runs=${RUNS:-3}
out=${OUT:-$(mktemp -d)}
impls=${*:-ompi}
sizes=8,1K,64K,1M,16M,128M # mpi_bench.c's sizes, so the rows pair up

die() { echo "mpi-vs-plain: $*" >&2; exit 1; }

if [ ! -x "$build/bin/distcomm-perf" ]; then
  cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null || die "cmake failed"
  cmake --build "$build" -j "$(nproc)" --target distcomm-perf >/dev/null || die "build failed"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset MLX_RANK MLX_HOSTFILE
# distcomm's mpi backend is what is measured: under Open MPI's PMIx server
# "any" would start distcomm's own ring.
export DISTCOMM_BACKEND=mpi

for impl in $impls; do
  case $impl in
    ompi) mpicc=mpicc.openmpi; mpirun=(mpirun.openmpi --oversubscribe -np 2) ;;
    mpich) mpicc=mpicc.mpich; mpirun=(mpirun.mpich -np 2) ;;
    *) die "unknown IMPL $impl (ompi or mpich)" ;;
  esac
  command -v "$mpicc" >/dev/null || die "$mpicc not found (Debian: libopenmpi-dev / libmpich-dev)"
  "$mpicc" -O2 -o "$out/plain_$impl" "$peers/mpi_bench.c" || die "$mpicc failed"
  # -c 0: distcomm-perf's check fills whole buffers with patterned data
  # before timing, mpi_bench.c does not; either way caches differ, so off.
  perf=("$build/bin/distcomm-perf" -P -c 0 -l "$sizes" -R "$runs"
        -t all_reduce,all_gather,reduce_scatter,sendrecv)
  for r in $(seq "$rounds"); do
    if [ $((r % 2)) = 1 ]; then order="plain distcomm"; else order="distcomm plain"; fi
    for side in $order; do
      if [ "$side" = plain ]; then cmd=("$out/plain_$impl" "$runs"); else cmd=("${perf[@]}"); fi
      timeout 900 "${mpirun[@]}" "${cmd[@]}" > "$out/$impl.$side.$r.txt" || die "$impl $side round $r failed"
    done
  done
  grep -h "backend" "$out/$impl.distcomm.1.txt" | head -1
  grep -h "^# " "$out/$impl.plain.1.txt" | head -1
  echo "## $impl: median of $rounds rounds (each the median of $runs runs), 2 ranks"
  awk -v impl="$impl" '
    FNR == 1 { side = FILENAME ~ /\.plain\./ ? "plain" : "distcomm" }
    /^(allreduce|allgather|reduce_scatter|pingpong) / && ($7 == "ok" || $7 == "-") {
      k = $1 " " $2; t[side, k, ++n[side, k]] = $4; keys[k] = 1
    }
    /^(allreduce|allgather|reduce_scatter|pingpong) / && $7 != "ok" && $7 != "-" { bad++ }
    function med(side, k,   i, j, m, a, x) {
      m = n[side, k]
      for (i = 1; i <= m; i++) a[i] = t[side, k, i]
      for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
      return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    END {
      printf "%-15s %10s %14s %14s %9s\n", "op", "bytes", "plain_us", "distcomm_us", "overhead"
      split("allreduce allgather reduce_scatter pingpong", ops, " ")
      split("8 1024 65536 1048576 16777216 134217728", szs, " ")
      for (o = 1; o <= 4; o++) for (s = 1; s <= 6; s++) {
        k = ops[o] " " szs[s]
        if (!(k in keys) || !n["plain", k] || !n["distcomm", k]) continue
        p = med("plain", k); d = med("distcomm", k)
        printf "%-15s %10d %14.2f %14.2f %+8.1f%%\n", ops[o], szs[s], p, d, (d / p - 1) * 100
      }
      if (bad) printf "# %d rows failed their check\n", bad
    }' "$out/$impl".*.txt
done
echo "# raw outputs: $out"
