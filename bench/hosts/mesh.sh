#!/bin/bash
# bench/hosts/mesh.sh [BUILD] [RATE]: the mesh backend (MLX's jaccl over TCP)
# against the ring, on namespace hosts (tests/hosts/lib.sh; root needed).
#
# 1. Bandwidth, 3 and 4 hosts, every link limited to RATE (default 1gbit)
#    by tc tbf: a full mesh of direct links (distcomm-config --backend mesh
#    --auto-setup writes the file), and the management bridge with the same
#    rate per host in each direction. all_sum of 16 and 64 MiB:
#      mesh      distcomm-launch --backend jaccl  (each block to its owner
#                over its own link, n-1 links at once: bound 2 S / (n B))
#      jring     distcomm-launch --backend jaccl-ring (the ring algorithm,
#                both directions, over the links to the two neighbours:
#                bound (n-1) S / (n B), the mesh's at n = 3)
#      bridge    distcomm-launch (the ring over the shared bridge, one
#                link per host: bound 2 (n-1) S / (n B))
# 2. Latency, 4 hosts, no limits: all_sum 8 B to 64 KiB, mesh vs bridge vs
#    jaccl-ring.
# Prints distcomm-perf's tables and a summary with the bounds.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(realpath "${1:-$TOP/build}")
RATE=${2:-1gbit}
# shellcheck source=../../tests/hosts/lib.sh
source "$TOP/tests/hosts/lib.sh"
L=$BUILD/bin/distcomm-launch
P=$BUILD/bin/distcomm-perf
C=$BUILD/bin/distcomm-config
OUT=$(mktemp -d /tmp/dc-mesh-bench.XXXXXX)

links() { # N: a full mesh of direct links, addressed by distcomm-config
    local n=$1 i j
    for ((i = 1; i < n; i++)); do for ((j = i + 1; j <= n; j++)); do hosts_link "$i" "$j"; done; done
    hosts_exec 1 timeout 60 "$C" --hosts "$(seq -s, -f '10.99.0.%g' 1 "$n")" --over direct \
        --backend mesh --auto-setup --output "$OUT/mesh$n.json" >/dev/null 2>&1 ||
        { echo "distcomm-config failed" >&2; exit 1; }
    /usr/bin/python3 -c 'import json,sys; print(json.dumps([{"ssh": x["ssh"], "ips": x["ips"]} for x in json.load(open(sys.argv[1]))]))' \
        "$OUT/mesh$n.json" >"$OUT/eth$n.json"
}

limit() { # N: RATE on every link and on each host's way into and out of the bridge
    local n=$1 i j
    for ((i = 1; i <= n; i++)); do
        for ((j = 1; j <= n; j++)); do
            [ "$i" = "$j" ] || hosts_exec "$i" tc qdisc replace dev "d$i$j" root tbf rate "$RATE" burst 256kb latency 100ms
        done
        hosts_exec "$i" tc qdisc replace dev eth0 root tbf rate "$RATE" burst 256kb latency 100ms
        ip -n "$_HOSTS_SWITCH" link >/dev/null 2>&1 &&
            ip netns exec "$_HOSTS_SWITCH" tc qdisc replace dev "p$i" root tbf rate "$RATE" burst 256kb latency 100ms
    done
}

run() { # NAME BACKEND N PERF-ARGS...
    local name=$1 backend=$2 n=$3
    shift 3
    echo "== $name ($backend, $n hosts): distcomm-perf $*"
    local hf=$OUT/mesh$n.json
    [ "$backend" = ring ] && hf=$OUT/eth$n.json
    hosts_exec 1 timeout 600 "$L" --backend "$backend" --hostfile "$hf" -- "$P" "$@" | tee "$OUT/$name.txt"
}

bandwidth() { # N
    local n=$1
    hosts_up "$n" || exit 1
    links "$n"
    limit "$n"
    local big=(-t all_reduce -l 16M,64M -n 3 -w 1 -R 3)
    run mesh$n mesh "$n" "${big[@]}"
    run jring$n jaccl-ring "$n" "${big[@]}"
    run bridge$n ring "$n" "${big[@]}"
    hosts_down
    /usr/bin/python3 - "$OUT" "$RATE" "$n" <<'PY'
import re, sys
out, rate, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
num, unit = re.match(r"([\d.]+)([gmk])", rate.lower()).groups()
bps = float(num) * {"g": 1e9, "m": 1e6, "k": 1e3}[unit] / 8
def times(name):
    t = {}
    for line in open(f"{out}/{name}{n}.txt"):
        f = line.split()
        if len(f) >= 8 and f[0].isdigit():
            t[int(f[0])] = float(f[4]) / 1e3  # size count type redop time(us)
    return t
m, j, b = times("mesh"), times("jring"), times("bridge")
print(f"\nall_sum on {n} hosts, {rate} per link: ms (percent of its bound)")
print(f"{'bytes':>9} {'mesh':>15} {'jaccl-ring':>15} {'bridge ring':>15} {'bridge/mesh':>11}")
for s in sorted(m):
    bounds = (2 * s / (n * bps), (n - 1) * s / (n * bps), 2 * (n - 1) * s / (n * bps))
    cells = [f"{t:7.1f} ({100 * bd * 1e3 / t:3.0f}%)" for t, bd in zip((m[s], j.get(s, 1e9), b.get(s, 1e9)), bounds)]
    print(f"{s:>9} {cells[0]:>15} {cells[1]:>15} {cells[2]:>15} {b.get(s, 0) / m[s]:10.2f}x")
PY
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), rate $RATE per link"
bandwidth 3
bandwidth 4
# latency: 4 hosts, no limits
hosts_up 4 || exit 1
links 4
small=(-t all_reduce -l 8,1K,64K -R 5)
run lat_mesh mesh 4 "${small[@]}"
run lat_bridge ring 4 "${small[@]}"
run lat_jring jaccl-ring 4 "${small[@]}"
membw=$TOP/../shared/bench/peers/membw.c
if [ -f "$membw" ] && cc -O2 -o "$OUT/membw" "$membw" 2>/dev/null; then
    echo "host memcpy: $("$OUT/membw" 128 9 | grep -i memcpy | head -1)"
fi
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "raw output: $OUT"
