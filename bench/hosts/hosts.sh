#!/bin/bash
# bench/hosts/hosts.sh [BUILD] [N] [RATES]: distcomm's ring against Open MPI on N
# namespace hosts (tests/hosts/lib.sh; root needed) whose links to the
# shared bridge are limited by tc tbf, one rank per host, in the same run.
# Defaults: N=4, RATES="1gbit 4gbit". Every host's eth0 and its switch port
# get the rate (each direction). For each rate it prints distcomm-perf's
# and Open MPI's (../shared/bench/peers/mpi_bench.c, --mca btl tcp) figures
# in the same columns, then all_sum's busbw as a share of the link bound
# (busbw = algbw * 2(n-1)/n, whose bound is the link rate B), and against
# the ceiling these links give on this machine with no library at all:
# bench-tcp-floor's ring, every host streaming all_sum's bytes to the next.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(realpath "${1:-$TOP/build}")
N=${2:-4}
RATES=${3:-1gbit 4gbit}
# shellcheck source=../../tests/hosts/lib.sh
source "$TOP/tests/hosts/lib.sh"
OUT=$(mktemp -d /tmp/dc-hosts-bench.XXXXXX)
PEERS=$TOP/../shared/bench/peers
# The peers' benchmark from 1 MiB up (its small sizes take minutes at 1
# Gbit/s: 2000 iterations each) - the same program otherwise.
sed 's/^static const size_t sizes\[\] = .*/static const size_t sizes[] = {1 << 20, 16 << 20, 128 << 20};/' \
    "$PEERS/mpi_bench.c" >"$OUT/mpi_bench.c"
mpicc.openmpi -O2 -o "$OUT/mpi_bench_ompi" "$OUT/mpi_bench.c" ||
    { echo "needs libopenmpi-dev (scripts/deps --bench)" >&2; exit 1; }
# Our programs copied, so that a rebuild meanwhile does not disturb the run.
mkdir -p "$OUT/bin" && cp "$BUILD/bin/distcomm-launch" "$BUILD/bin/distcomm-perf" \
    "$BUILD/bin/bench-tcp-floor" "$OUT/bin/"
cc -O2 -o "$OUT/membw" "$PEERS/membw.c"

limit() { # RATE
    local i
    for ((i = 1; i <= N; i++)); do
        hosts_exec "$i" tc qdisc replace dev eth0 root tbf rate "$1" burst 512kb latency 100ms
        ip netns exec "$_HOSTS_SWITCH" tc qdisc replace dev "p$i" root tbf rate "$1" burst 512kb latency 100ms
    done
}

# The kernel's own ceiling: each host sends as many bytes as an all_sum of
# S does (2(n-1)/n * S) to the next host while it receives from the last.
ceiling() { # RATE
    local s i bytes
    for s in 1048576 16777216 134217728; do
        bytes=$((s * 2 * (N - 1) / N))
        for ((i = N; i >= 2; i--)); do
            hosts_exec "$i" timeout 300 "$OUT/bin/bench-tcp-floor" ring $((i - 1)) "$hosts" 29500 \
                "$bytes" 5 >/dev/null &
        done
        hosts_exec 1 timeout 300 "$OUT/bin/bench-tcp-floor" ring 0 "$hosts" 29500 "$bytes" 5
        wait
    done
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $("$OUT/membw" 128 9 | grep -i memcpy | head -1)"
hosts_up "$N" || exit 1
hosts=$(seq -s, -f '10.99.0.%g' 1 "$N")
for rate in $RATES; do
    limit "$rate"
    echo "== $rate: the links' ceiling (bench-tcp-floor ring, no library)"
    ceiling "$rate" | tee "$OUT/raw-$rate.txt"
    echo "== $rate: distcomm (ring over TCP, one rank per host)"
    hosts_exec 1 timeout 900 "$OUT/bin/distcomm-launch" --hosts "$hosts" -- \
        "$OUT/bin/distcomm-perf" -P -t all_reduce,all_gather,reduce_scatter -l 1M,16M,128M -R 3 |
        tee "$OUT/dc-$rate.txt"
    echo "== $rate: Open MPI (btl tcp)"
    # Open MPI's daemons now and then die in hwloc at start (a segfault in
    # hwloc_shmem_topology_write, before any traffic): one more try then.
    for try in 1 2; do
        hosts_exec 1 timeout 900 mpirun.openmpi --allow-run-as-root --host "$hosts" -np "$N" \
            --mca plm_rsh_agent "$DISTCOMM_SSH" --mca btl tcp,self --mca btl_tcp_if_include eth0 \
            --mca oob_tcp_if_include eth0 "$OUT/mpi_bench_ompi" 3 | tee "$OUT/ompi-$rate.txt"
        grep -q '^allreduce' "$OUT/ompi-$rate.txt" && break
        echo "== $rate: Open MPI did not run (try $try)"
    done
done
/usr/bin/python3 - "$OUT" "$N" $RATES <<'PY'
import re, sys
out, n, rates = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
names = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reduce_scatter"}
def table(path):
    t = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 6 and f[1].isdigit():
            t[(names.get(f[0], f[0]), int(f[1]))] = float(f[5])  # busbw GB/s
    return t
def ceiling(path):  # all_sum's size -> the median rate of the raw ring
    rates = {}
    for line in open(path):
        m = re.match(r"ring of \d+, (\d+) bytes each way.*, ([\d.]+) GB/s per rank", line)
        if m:
            rates.setdefault(int(m.group(1)) * n // (2 * (n - 1)), []).append(float(m.group(2)))
    return {s: sorted(r)[len(r) // 2] for s, r in rates.items()}
print(f"\nbusbw in GB/s on {n} hosts (share of the link rate B); ratio = distcomm / Open MPI")
print("ceiling: bench-tcp-floor's ring moving all_sum's bytes with no library (median of 5);")
print("of ceil: distcomm's all_sum busbw as a share of it")
print(f"{'rate':>6} {'op':>15} {'bytes':>10} {'distcomm':>16} {'Open MPI':>16} {'ratio':>6}"
      f" {'ceiling':>15} {'of ceil':>7}")
for rate in rates:
    num, unit = re.match(r"([\d.]+)([gmk])", rate.lower()).groups()
    B = float(num) * {"g": 1e9, "m": 1e6, "k": 1e3}[unit] / 8 / 1e9
    d, m = table(f"{out}/dc-{rate}.txt"), table(f"{out}/ompi-{rate}.txt")
    c = ceiling(f"{out}/raw-{rate}.txt")
    for key in sorted(d):
        if key[1] < 1 << 20:
            continue
        tail = ""
        if key[0] == "allreduce" and key[1] in c:
            tail = f" {c[key[1]]:7.3f} ({100*c[key[1]]/B:3.0f}%) {100*d[key]/c[key[1]]:6.0f}%"
        theirs = f"{m[key]:7.3f} ({100*m[key]/B:3.0f}%) {d[key]/m[key]:6.2f}" if key in m \
            else f"{'-':>16} {'-':>6}"
        print(f"{rate:>6} {key[0]:>15} {key[1]:>10} {d[key]:7.3f} ({100*d[key]/B:3.0f}%) "
              f"{theirs}{tail}")
PY
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg); raw output: $OUT"
