#!/bin/bash
# bench/ab/placement-ab.sh OLD_BUILD NEW_BUILD [TURNS] [SIZES] [OPS]: two builds
# in turns over shared memory (2 ranks), each turn filed under where the
# host had put the two vCPUs: "near" (a cache line's round trip between two
# processes under 300 ns: they share a cache) or "far" (different dies),
# measured before and after the turn (bench-copy-rate line); a turn whose
# two readings disagree is dropped. Prints per placement, op and size the
# median time of each build and old/new. On a VM whose host moves its
# vCPUs every few seconds (bench/peers/shm-tuning.md, session 15) this compares
# the builds where they ran alike.
# Defaults: 20 turns, sizes 8,1K,32K,64K,256K,1M, ops all_gather.
set -u
[ $# -ge 2 ] || { echo "usage: placement-ab.sh OLD_BUILD NEW_BUILD [TURNS] [SIZES] [OPS]" >&2; exit 2; }
OLD=$(realpath "${1:?usage: placement-ab.sh OLD_BUILD NEW_BUILD [TURNS] [SIZES] [OPS]}")
NEW=$(realpath "${2:?usage: placement-ab.sh OLD_BUILD NEW_BUILD [TURNS] [SIZES] [OPS]}")
TURNS=${3:-20}
SIZES=${4:-8,1K,32K,64K,256K,1M}
OPS=${5:-all_gather}
OUT=$(mktemp /tmp/dc-placement.XXXXXX)
LINE=$NEW/bin/bench-copy-rate
[ -x "$LINE" ] || { echo "no $LINE (build the bench targets)" >&2; exit 1; }

# shellcheck source-path=SCRIPTDIR source=../tools/placement.sh
. "$(dirname "$0")/../tools/placement.sh" # where: near | far | none

run() { # LABEL BUILD
    "$2/bin/distcomm-launch" -n 2 -- "$2/bin/distcomm-perf" -P -c 1 -R 3 -l "$SIZES" -t "$OPS" |
        awk -v b="$1" '$2 ~ /^[0-9]+$/ { print b, $1, $2, $4 }'
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
kept=0
for ((t = 1; t <= TURNS; t++)); do
    order="old new"
    [ $((t % 2)) = 0 ] && order="new old" # neither always goes first
    for side in $order; do
        build=$OLD
        [ "$side" = new ] && build=$NEW
        a=$(where)
        rows=$(run "$side" "$build")
        b=$(where)
        if [ "$a" = "$b" ] && [ "$a" != none ]; then
            echo "$rows" | sed "s/^/$a /" >>"$OUT"
            kept=$((kept + 1))
        fi
    done
done
echo "kept $kept of $((2 * TURNS)) runs (the others moved between placements); rows in $OUT"
/usr/bin/python3 - "$OUT" <<'PY'
import collections, statistics, sys
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    place, side, op, size, us = line.split()
    t[(place, op, int(size), side)].append(float(us))
print(f"{'where':5} {'op':15} {'bytes':>9} {'old us':>9} {'n':>3} {'new us':>9} {'n':>3} {'old/new':>7}")
for place, op, size in sorted({k[:3] for k in t}):
    o, n = t.get((place, op, size, "old"), []), t.get((place, op, size, "new"), [])
    if not o or not n:
        continue
    mo, mn = statistics.median(o), statistics.median(n)
    print(f"{place:5} {op:15} {size:9} {mo:9.2f} {len(o):3} {mn:9.2f} {len(n):3} {mo / mn:7.2f}")
PY
