#!/bin/bash
# new-ops.sh [RESULTS_DIR] - distcomm-perf's new ops (all_to_all, gather,
# scatter, reduce to root 0; float32, sum) beside Open MPI and MPICH on 2
# and 4 ranks of this host over shared memory, in one run: for each rank
# count the three sides take turns ROUNDS times and the table shows each
# side's median over its rounds (each figure itself the median of RUNS timed
# runs of the slowest rank's time per call), so a slow spell of the host
# lands on every side alike. The MPI side is bench/peers/mpi_ops.c, built here
# with mpicc.openmpi and mpicc.mpich (scripts/deps --bench installs them):
# same sizes, iteration schedule and columns as distcomm-perf --peers-format.
# Ends with the host's memcpy rate and the load before and after.
# Environment: BUILD (default <repo>/build, Release), RANKS ("2 4"),
# ROUNDS (3), RUNS (5), SIZES (8,1K,64K,1M,16M), MPICH_MAX_ITERS (iterations
# per run cap for MPICH on more than 2 ranks, default 20: it busy-polls, so
# with more ranks than cores a small call takes milliseconds and the usual
# 2000 iterations would take minutes per size; the row's iters column says).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$repo/build}
results=${1:-$repo/bench/results/$(date +%F)/new-ops}
ranks=${RANKS:-2 4}
rounds=${ROUNDS:-3}
runs=${RUNS:-5}
sizes=${SIZES:-8,1K,64K,1M,16M}
perf=$build/bin/distcomm-perf
launch=$build/bin/distcomm-launch
if [ ! -x "$perf" ] || [ ! -x "$launch" ]; then echo "new-ops: build $build first" >&2; exit 1; fi
mkdir -p "$results"
tmp=$(mktemp -d /tmp/distcomm-newops.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mpicc.openmpi -O2 -o "$tmp/mpi_ops_ompi" "$repo/bench/peers/mpi_ops.c"
mpicc.mpich -O2 -o "$tmp/mpi_ops_mpich" "$repo/bench/peers/mpi_ops.c"
# the largest size in bytes, for mpi_ops
max=0
for v in ${sizes//,/ }; do
  case $v in
    *K) v=$((${v%K} * 1024)) ;;
    *M) v=$((${v%M} * 1048576)) ;;
    *G) v=$((${v%G} * 1073741824)) ;;
  esac
  ((v > max)) && max=$v
done
echo "# $(date -u) bench/peers/new-ops.sh: RANKS='$ranks' ROUNDS=$rounds RUNS=$runs SIZES=$sizes" >"$results/info.txt"
echo "# load before: $(uptime)" >>"$results/info.txt"
for n in $ranks; do
  for ((r = 0; r < rounds; r++)); do
    echo "# $n ranks, round $r" >&2
    timeout 600 "$launch" -n "$n" -- "$perf" --peers-format -c 1 -R "$runs" -l "$sizes" \
      -t all_to_all,gather,scatter,reduce >"$results/distcomm.n$n.r$r.txt" 2>&1 ||
      { cat "$results/distcomm.n$n.r$r.txt"; echo "new-ops: distcomm-perf failed" >&2; exit 1; }
    timeout 600 mpirun.openmpi --allow-run-as-root --oversubscribe -np "$n" \
      "$tmp/mpi_ops_ompi" "$runs" "$max" >"$results/ompi.n$n.r$r.txt" 2>&1 ||
      { cat "$results/ompi.n$n.r$r.txt"; echo "new-ops: Open MPI failed" >&2; exit 1; }
    cap=0
    [ "$n" -gt 2 ] && cap=${MPICH_MAX_ITERS:-20}
    timeout 600 mpirun.mpich -np "$n" "$tmp/mpi_ops_mpich" "$runs" "$max" "$cap" \
      >"$results/mpich.n$n.r$r.txt" 2>&1 ||
      { cat "$results/mpich.n$n.r$r.txt"; echo "new-ops: MPICH failed" >&2; exit 1; }
  done
done
echo "# load after: $(uptime)" >>"$results/info.txt"
cc -O2 -o "$tmp/membw" "$repo/../shared/bench/peers/membw.c" 2>/dev/null &&
  echo "# host memcpy: $("$tmp/membw" 128 9 | grep -i memcpy | head -1)" >>"$results/info.txt"
# shellcheck disable=SC2086 # ranks is a word list on purpose
/usr/bin/python3 - "$results" $ranks >"$results/table.md" <<'PY'
import glob, os, statistics, sys
res, ranks = sys.argv[1], sys.argv[2:]
def rows(path):
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) == 7 and f[0] in ("alltoall", "gather", "scatter", "reduce"):
            if f[6] != "ok":
                sys.exit(f"new-ops: {path}: {line.strip()}: check failed")
            out[(f[0], int(f[1]))] = float(f[3])
    return out
print(open(os.path.join(res, "info.txt")).read().rstrip().replace("\n", "  \n"))
print()
for n in ranks:
    side = {s: [rows(p) for p in sorted(glob.glob(f"{res}/{s}.n{n}.r*.txt"))]
            for s in ("distcomm", "ompi", "mpich")}
    print(f"### {n} ranks, shared memory (time per call, us; median of rounds)\n")
    print("| op | bytes | distcomm | Open MPI | MPICH | distcomm / Open MPI | distcomm / MPICH |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for key in sorted(side["distcomm"][0], key=lambda k: (["alltoall", "gather", "scatter", "reduce"].index(k[0]), k[1])):
        med = {s: statistics.median(r[key] for r in side[s] if key in r) for s in side
               if all(key in r for r in side[s])}
        if len(med) < 3:
            continue
        d, o, m = med["distcomm"], med["ompi"], med["mpich"]
        print(f"| {key[0]} | {key[1]} | {d:.2f} | {o:.2f} | {m:.2f} | {d / o:.2f} | {d / m:.2f} |")
    print()
PY
cat "$results/table.md"
