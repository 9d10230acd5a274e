#!/bin/bash
# bench/slurm/srun.sh [BUILD] [RATES] [SIZES]: the all_sum sweep under
# `srun --mpi=pmix -N 3 -n 6` on the test cluster (tests/slurm/cluster.sh:
# slurmctld, a slurmd in each of 3 namespace hosts; root needed), each
# compute host's link to the bridge limited by tc tbf (both directions),
# distcomm's own transport against Open MPI's collectives
# (DISTCOMM_BACKEND=mpi: the same distcomm-perf through the mpi backend)
# under the same srun, one after the other for each rate. Open MPI gets
# mpi_yield_when_idle=1: 6 ranks share 2 cores, and under srun it cannot
# know that (busy polling then starves the other ranks).
# The table: algbw, and its share of the host-link bound B x h / 2(h-1)
# (h = 3 hosts: a host's link carries at least 2(h-1)/h x S per all_sum
# of S bytes, as the hierarchy sends it: its 2 ranks reduce over shared
# memory, then the 3 hosts run a ring), as bench/hosts/hosts_hier.sh.
# Defaults: RATES="1gbit", SIZES="1M,4M,16M,64M".
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(realpath "${1:-$TOP/build}")
RATES=${2:-1gbit}
SIZES=${3:-1M,4M,16M,64M}
OUT=$(mktemp -d /tmp/dc-slurm-bench.XXXXXX)
chmod 755 "$OUT"
PEERS=$TOP/../shared/bench/peers
# shellcheck source=../../tests/slurm/cluster.sh
source "$TOP/tests/slurm/cluster.sh"
STATE=$OUT/cluster.state
trap 'cluster_down "$STATE"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
# Our programs copied, so that a rebuild meanwhile does not disturb the run.
mkdir -p "$OUT/bin" && cp "$BUILD/bin/distcomm-perf" "$OUT/bin/" || exit 1
cc -O2 -o "$OUT/membw" "$PEERS/membw.c" || exit 1

limit() { # RATE
    local i
    for ((i = 1; i <= CL_HOSTS; i++)); do
        ip netns exec "${CL_NS[$i]}" tc qdisc replace dev eth0 root tbf rate "$1" burst 512kb latency 100ms
        ip netns exec "$CL_SW" tc qdisc replace dev "p$i" root tbf rate "$1" burst 512kb latency 100ms
    done
}

sweep() { # LABEL [VAR=VALUE...]: distcomm-perf on 3 hosts x 2 ranks
    local label=$1
    shift
    cl_login timeout 1200 env DISTCOMM_JOB_TOKEN_FILE="$CL_TOKEN" OMPI_MCA_btl_tcp_if_include=eth0 \
        OMPI_MCA_oob_tcp_if_include=eth0 OMPI_MCA_mpi_yield_when_idle=1 "$@" srun --mpi=pmix -N 3 -n 6 \
        "$OUT/bin/distcomm-perf" -P -t all_reduce -l "$SIZES" -R 3 </dev/null 2>&1 |
        tee "$OUT/$label.txt"
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $("$OUT/membw" 128 9 | grep -i memcpy | head -1)"
cluster_up "$STATE" || exit 1
cluster_load "$STATE"
for rate in $RATES; do
    limit "$rate"
    echo "== $rate: distcomm (its own transport: shared memory in a host, TCP across)"
    sweep "dc-$rate"
    echo "== $rate: Open MPI's collectives (DISTCOMM_BACKEND=mpi)"
    sweep "ompi-$rate" DISTCOMM_BACKEND=mpi
done
/usr/bin/python3 - "$OUT" $RATES <<'PY'
import re, sys
out, rates = sys.argv[1], sys.argv[2:]
h = 3  # hosts
def table(path):  # bytes -> algbw GB/s
    t = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 6 and f[0] == "allreduce" and f[1].isdigit():
            t[int(f[1])] = float(f[4])
    return t
print("\nall_sum algbw in GB/s, srun --mpi=pmix -N 3 -n 6; in brackets the share of the")
print(f"host-link bound (each host sends 2(h-1)/h x S over its link of rate B, h = {h});")
print("ratio = distcomm / Open MPI")
print(f"{'rate':>6} {'bytes':>10} {'distcomm':>16} {'Open MPI':>16} {'ratio':>6}")
for rate in rates:
    num, unit = re.match(r"([\d.]+)([gmk])", rate.lower()).groups()
    B = float(num) * {"g": 1e9, "m": 1e6, "k": 1e3}[unit] / 8 / 1e9
    bound = B * h / (2 * (h - 1))
    d, m = table(f"{out}/dc-{rate}.txt"), table(f"{out}/ompi-{rate}.txt")
    for s in sorted(d):
        theirs = f"{m[s]:7.3f} ({100*m[s]/bound:3.0f}%) {d[s]/m[s]:6.2f}" if s in m else f"{'-':>16} {'-':>6}"
        print(f"{rate:>6} {s:>10} {d[s]:7.3f} ({100*d[s]/bound:3.0f}%) {theirs}")
PY
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg); raw output: $OUT"
