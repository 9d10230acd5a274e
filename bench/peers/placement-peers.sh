#!/bin/bash
# bench/peers/placement-peers.sh BUILD [TURNS] [PEERS] [SIZES]: distcomm and MPI
# peers in turns over shared memory (2 ranks), each run filed under where the
# host had put the two vCPUs, as bench/ab/placement-ab.sh does for two builds:
# "near" (a cache line's round trip between two processes under 300 ns) or
# "far" (different dies), read before and after the run; a run whose two
# readings disagree is dropped. Every run is one size (a few seconds, so
# that it stays on one placement). Prints per placement bench/tools/compare.py's
# table of the runs filed there (each side's median; ratio and goal). On a
# VM whose host moves its vCPUs every few seconds (bench/peers/shm-tuning.md,
# session 15), this says whether a cell of bench/peers/compare lost to the code
# or to the draw; bench/peers/compare shm runs it after its rounds.
# Defaults: 4 turns, peers "mpich ompi-shm", sizes 8,1K,64K,1M,16M,128M
# (the peers' benchmark, ../shared/bench/peers/mpi_bench.c, built per size).
# PLACED_DIR=dir keeps the runs there (default: a new /tmp directory).
set -u
[ $# -ge 1 ] || { echo "usage: placement-peers.sh BUILD [TURNS] [PEERS] [SIZES]" >&2; exit 2; }
BUILD=$(realpath "${1:?usage: placement-peers.sh BUILD [TURNS] [PEERS] [SIZES]}")
TURNS=${2:-4}
PEERS=${3:-mpich ompi-shm}
SIZES=${4:-8,1K,64K,1M,16M,128M}
here=$(cd "$(dirname "$0")" && pwd)
src=${MPI_BENCH:-$here/../../../shared/bench/peers/mpi_bench.c}
LINE=$BUILD/bin/bench-copy-rate
[ -x "$LINE" ] || { echo "no $LINE (build the bench targets)" >&2; exit 1; }
[ -f "$src" ] || { echo "no $src (set MPI_BENCH=)" >&2; exit 1; }
work=${PLACED_DIR:-$(mktemp -d /tmp/dc-placement-peers.XXXXXX)}
mkdir -p "$work" || exit 1
bin=$(mktemp -d /tmp/dc-placement-bin.XXXXXX) # the peers' programs, a run's output
trap 'rm -rf "$bin"' EXIT

# The peers' benchmark once per size (1K -> (1 << 10)), so that every run
# is one size: a few seconds, short enough to stay on one placement.
IFS=, read -ra sizes <<<"$SIZES"
for p in $PEERS; do
    case $p in
    mpich) cc=mpicc.mpich ;;
    ompi-shm) cc=mpicc.openmpi ;;
    *) echo "unknown peer $p (mpich, ompi-shm)" >&2; exit 1 ;;
    esac
    for z in "${sizes[@]}"; do
        c=$(echo "$z" | sed -e 's/^\([0-9]*\)K$/(\1 << 10)/' -e 's/^\([0-9]*\)M$/(\1 << 20)/')
        sed "s/^static const size_t sizes\[\] = {.*};/static const size_t sizes[] = {$c};/" "$src" >"$bin/b.c"
        grep -q "sizes\[\] = {$c}" "$bin/b.c" || { echo "could not set the sizes in $src" >&2; exit 1; }
        $cc -O2 -o "$bin/$p.$z" "$bin/b.c" || exit 1
    done
done

# shellcheck source-path=SCRIPTDIR source=../tools/placement.sh
. "$(dirname "$0")/../tools/placement.sh" # where: near | far | none

run() { # SIDE SIZE: the side's rows in the peers' columns
    case $1 in
    distcomm) "$BUILD/bin/distcomm-launch" -n 2 -- "$BUILD/bin/distcomm-perf" -P -c 1 -R 3 -l "$2" \
        -t all_reduce,all_gather,reduce_scatter,sendrecv ;;
    mpich) timeout 300 mpirun.mpich -np 2 "$bin/mpich.$2" 3 ;;
    ompi-shm) timeout 300 mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 "$bin/ompi-shm.$2" 3 ;;
    esac 2>/dev/null
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); runs filed in $work"
kept=0
total=0
read -ra sides <<<"distcomm $PEERS"
n=${#sides[@]}
for ((t = 1; t <= TURNS; t++)); do
    for z in "${sizes[@]}"; do
        for ((i = 0; i < n; i++)); do
            side=${sides[$(((t + i) % n))]} # who goes first rotates
            a=$(where)
            run "$side" "$z" >"$bin/run"
            b=$(where)
            total=$((total + 1))
            if [ "$a" = "$b" ] && [ "$a" != none ] && grep -q ' ok$' "$bin/run"; then
                mkdir -p "$work/$a"
                mv "$bin/run" "$work/$a/$side.$t.$z.txt"
                kept=$((kept + 1))
            fi
        done
    done
    # What bounds the 1 MiB cells through the pipes, on the same placement:
    # 512 KiB each way through shared memory, written then read.
    a=$(where)
    "$LINE" cross 512 >"$bin/run"
    b=$(where)
    if [ "$a" = "$b" ] && [ "$a" != none ]; then
        mkdir -p "$work/$a"
        mv "$bin/run" "$work/$a/bounds.$t.txt"
    fi
done
echo "kept $kept of $total runs (the others moved between placements)"
# One table per placement, with bench/peers/compare's columns and goals (the
# first source is the subject; Open MPI's column sets the shm goals).
for place in near far; do
    [ -d "$work/$place" ] || continue
    args=()
    for side in "${sides[@]}" bounds; do
        for f in "$work/$place/$side".*.txt; do
            [ -f "$f" ] && args+=("$side=$f")
        done
    done
    echo
    ours=$(find "$work/$place" -name 'distcomm.*' | wc -l)
    echo "## $place placement ($((${#args[@]} - $(find "$work/$place" -name 'bounds.*' | wc -l))) runs; $ours of distcomm)"
    [ "$ours" -gt 0 ] || continue # nothing of ours to compare there
    /usr/bin/python3 "$here/../tools/compare.py" "${args[@]}" || echo "(compare.py failed on these runs)"
done
exit 0
