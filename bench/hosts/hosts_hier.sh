#!/bin/bash
# bench/hosts/hosts_hier.sh [BUILD] [HOSTS] [RATES] [SIZES]: 2 ranks on each of N
# namespace hosts (tests/hosts/lib.sh; root needed) whose links to the
# shared bridge are limited by tc tbf, all_sum float32, in the same run:
# distcomm hierarchical (DISTCOMM_HIER=1), distcomm's flat ring
# (DISTCOMM_HIER=0) and Open MPI (../shared/bench/peers/mpi_bench.c, its
# all_reduce alone, btl tcp: Open MPI's shared memory, vader, fails here,
# as every namespace host has the machine's host name and the hosts'
# segment names collide; inside a host its TCP goes over loopback, which
# the rate limit does not touch).
# Defaults: HOSTS="2 4", RATES="1gbit", SIZES="64K 256K 1M 4M 16M 64M";
# ROUNDS=2 (environment): the two distcomm modes run in turns that many
# times (each distcomm-perf -R 3, the median of 3) and the table keeps each
# mode's best round, as the machine's load drifts; Open MPI runs once.
# The table gives each one's time and its share of the link bound: every
# host's link must carry 2(h-1)/h * S out (and in) whatever the algorithm,
# so the bound time is 2(h-1)/h * S / B for h hosts at rate B.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(realpath "${1:-$TOP/build}")
HOSTS=${2:-2 4}
RATES=${3:-1gbit}
SIZES=${4:-64K 256K 1M 4M 16M 64M}
PER=2
ROUNDS=${ROUNDS:-2}
# shellcheck source=../../tests/hosts/lib.sh
source "$TOP/tests/hosts/lib.sh"
OUT=$(mktemp -d /tmp/dc-hier-bench.XXXXXX)
PEERS=$TOP/../shared/bench/peers
bytes() { numfmt --from=iec "$1"; }
csizes=$(for s in $SIZES; do printf '%s, ' "$(bytes "$s")"; done)
# The peers' benchmark with these sizes and all_reduce alone.
sed -e "s/^static const size_t sizes\[\] = .*/static const size_t sizes[] = {${csizes%, }};/" \
    -e 's/for (int o = 0; o < 4; o++)/for (int o = 0; o < 1; o++)/' \
    "$PEERS/mpi_bench.c" >"$OUT/mpi_bench.c"
mpicc.openmpi -O2 -o "$OUT/mpi_bench_ompi" "$OUT/mpi_bench.c" ||
    { echo "needs libopenmpi-dev (scripts/deps --bench)" >&2; exit 1; }
mkdir -p "$OUT/bin" && cp "$BUILD/bin/distcomm-launch" "$BUILD/bin/distcomm-perf" "$OUT/bin/"
cc -O2 -o "$OUT/membw" "$PEERS/membw.c"

limit() { # N RATE
    local i
    for ((i = 1; i <= $1; i++)); do
        hosts_exec "$i" tc qdisc replace dev eth0 root tbf rate "$2" burst 512kb latency 100ms
        ip netns exec "$_HOSTS_SWITCH" tc qdisc replace dev "p$i" root tbf rate "$2" burst 512kb latency 100ms
    done
}

dc() { # N RATE MODE ROUND
    local hosts
    hosts=$(seq -s, -f '10.99.0.%g' 1 "$1")
    echo "== $2, $1 hosts x $PER: distcomm DISTCOMM_HIER=$3 (round $4, load $(cut -d' ' -f1 /proc/loadavg))"
    hosts_exec 1 timeout 900 "$OUT/bin/distcomm-launch" -n $PER --hosts "$hosts" \
        --env DISTCOMM_HIER="$3" -- "$OUT/bin/distcomm-perf" -P -t all_reduce \
        -l "$(echo $SIZES | tr ' ' ,)" -R 3 | tee "$OUT/dc$3-$1-$2-$4.txt"
}

ompi() { # N RATE
    local hosts
    hosts=$(seq -s, -f "10.99.0.%g:$PER" 1 "$1")
    echo "== $2, $1 hosts x $PER: Open MPI (btl tcp)"
    hosts_exec 1 timeout 600 mpirun.openmpi --allow-run-as-root --host "$hosts" -np $(($1 * PER)) \
        --mca plm_rsh_agent "$DISTCOMM_SSH" --mca btl tcp,self --mca btl_tcp_if_include eth0 \
        --mca oob_tcp_if_include eth0 "$OUT/mpi_bench_ompi" 3 | tee "$OUT/ompi-$1-$2.txt"
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $("$OUT/membw" 128 9 | grep -i memcpy | head -1)"
for n in $HOSTS; do
    hosts_up "$n" || exit 1
    for rate in $RATES; do
        limit "$n" "$rate"
        for ((round = 1; round <= ROUNDS; round++)); do
            dc "$n" "$rate" 1 $round
            dc "$n" "$rate" 0 $round
        done
        ompi "$n" "$rate"
        echo "load now: $(cut -d' ' -f1-3 /proc/loadavg)"
    done
    hosts_down
    HOSTS_N=0
done
/usr/bin/python3 - "$OUT" "$PER" "$HOSTS" $RATES <<'PY'
import glob, re, sys
out, per, hosts, rates = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
def table(pattern):  # the best of the rounds, seconds per call
    t = {}
    for path in glob.glob(pattern):
        for line in open(path):
            f = line.split()
            if len(f) >= 6 and f[1].isdigit() and f[0] in ("all_reduce", "allreduce"):
                s = float(f[3]) * 1e-6
                t[int(f[1])] = min(s, t.get(int(f[1]), s))
    return t
print(f"\nall_sum float32, {per} ranks per host: time per call in ms (share of the link bound 2(h-1)/h*S/B);")
print("distcomm: the best of the rounds; ratios > 1: hierarchical faster")
print(f"{'rate':>6} {'hosts':>5} {'bytes':>10} {'hierarchical':>16} {'flat ring':>16} {'Open MPI':>16} {'hier/flat':>9} {'hier/MPI':>9}")
for rate in rates:
    num, unit = re.match(r"([\d.]+)([gmk])", rate.lower()).groups()
    B = float(num) * {"g": 1e9, "m": 1e6, "k": 1e3}[unit] / 8
    for h in map(int, hosts):
        hi, fl = table(f"{out}/dc1-{h}-{rate}-*.txt"), table(f"{out}/dc0-{h}-{rate}-*.txt")
        mp = table(f"{out}/ompi-{h}-{rate}.txt")
        for S in sorted(hi):
            bound = 2 * (h - 1) / h * S / B
            cell = lambda t: f"{t.get(S, 0) * 1e3:8.2f} ({100 * bound / t[S]:3.0f}%)" if S in t else f"{'-':>16}"
            r = lambda a, b: f"{b[S] / a[S]:9.2f}" if S in a and S in b else f"{'-':>9}"
            print(f"{rate:>6} {h:>5} {S:>10} {cell(hi)} {cell(fl)} {cell(mp)} {r(hi, fl)} {r(hi, mp)}")
PY
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg); raw output: $OUT"
