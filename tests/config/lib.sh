# Helpers for the distcomm-config tests (sourced): run the tool from host
# 1's namespace, check its hostfile, render --dot, run a real job with it.
#   source lib.sh CONFIG BUILD   # CONFIG: distcomm-config, BUILD: build dir
set -u
CONFIG=${1:?usage: test.sh path/to/distcomm-config build-dir}
BUILD=${2:?usage: test.sh path/to/distcomm-config build-dir}
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=/usr/bin/python3
# shellcheck source=../hosts/lib.sh
source "$TOP/tests/hosts/lib.sh"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# "10.99.0.1,...,10.99.0.N"
hostlist() {
    local i s=
    for ((i = 1; i <= HOSTS_N; i++)); do s=$s${s:+,}${HOSTS_ADDR[$i]}; done
    echo "$s"
}

# distcomm-config run from host 1, as a user on that machine would.
config() {
    hosts_exec 1 timeout 60 "$CONFIG" "$@"
}

# Asserts a Python expression about the hostfile `h` (json.load of FILE).
check_json() { # FILE EXPR MESSAGE
    "$PY" -c 'import json,sys; h=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
        "$1" "$2" || fail "$3 (hostfile: $(cat "$1"))"
}

# Asserts that IP is an address of interface IF on host I.
check_addr() { # I IF IP
    hosts_exec "$1" ip -4 -o addr show dev "$2" | grep -q " inet $3/" ||
        fail "$3 is not on $2 of host $1: $(hosts_exec "$1" ip -4 -o addr show dev "$2")"
}

# --dot output rendered by Graphviz: a PNG must come out.
render_dot() { # FILE
    local png=$HOSTS_DIR/links.png
    timeout 30 dot -Tpng "$1" >"$png" || fail "dot could not render $1: $(cat "$1")"
    [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
        fail "dot -Tpng gave no PNG"
}

# Host index of "10.99.0.K".
host_of() { echo "${1##*.}"; }

# The hostfile as the ring backend's MLX_HOSTFILE (ip:5000+i per address)
# and its "envs", one per line after the JSON.
_mlx_hostfile() { # FILE
    "$PY" - "$1" <<'PYEOF'
import json, sys
h = json.load(open(sys.argv[1]))
hosts = h["hosts"] if isinstance(h, dict) else h
print(json.dumps([["%s:%d" % (ip, 5000 + i) for i, ip in enumerate(x["ips"])] for x in hosts]))
print(" ".join(x["ssh"] for x in hosts))
print(" ".join(h.get("envs", []) if isinstance(h, dict) else []))
PYEOF
}

# Runs CMD on every host of HOSTFILE: through distcomm-launch --hostfile
# when the launcher starts remote ranks, else by hand with MLX_RANK and
# MLX_HOSTFILE in each host's namespace (the documented no-launcher path).
# Output (all ranks) goes to $HOSTS_DIR/job.out.
run_job() { # HOSTFILE CMD...
    local hf=$1 out=$HOSTS_DIR/job.out
    shift
    if "$BUILD/bin/distcomm-launch" --help 2>&1 | grep -q DISTCOMM_SSH; then
        echo "real run: distcomm-launch --hostfile $hf -- $*"
        hosts_exec 1 timeout 90 "$BUILD/bin/distcomm-launch" --hostfile "$hf" -- "$@" >"$out" 2>&1 ||
            fail "the job failed: $(cat "$out")"
        return
    fi
    echo "real run by hand (this launcher has no remote ranks yet): $*"
    local lines mlx ssh envs r=0 pids=() k
    mapfile -t lines < <(_mlx_hostfile "$hf")
    mlx=$HOSTS_DIR/mlx_hostfile.json
    echo "${lines[0]}" >"$mlx"
    read -ra ssh <<<"${lines[1]}"
    read -ra envs <<<"${lines[2]:-}"
    : >"$out"
    for k in "${ssh[@]}"; do
        hosts_exec "$(host_of "$k")" env MLX_RANK=$r MLX_HOSTFILE="$mlx" DISTCOMM_TIMEOUT=60 DISTCOMM_INSECURE=1 "${envs[@]}" \
            timeout 90 "$@" >>"$out" 2>&1 &
        pids+=($!)
        r=$((r + 1))
    done
    for k in "${pids[@]}"; do wait "$k" || fail "a rank failed: $(cat "$out")"; done
}

# Every one of N ranks of examples/hello printed ten N's.
check_hello() { # N
    local n=$1 r
    for ((r = 0; r < n; r++)); do
        grep -q "^$r array(\[$n, $n, $n, $n, $n, $n, $n, $n, $n, $n\]" "$HOSTS_DIR/job.out" ||
            fail "rank $r did not print the all_sum of $n ranks: $(cat "$HOSTS_DIR/job.out")"
    done
}

# Bytes sent so far on host I's link to host J (interface dIJ).
link_tx() { hosts_exec "$1" cat "/sys/class/net/d$1$2/statistics/tx_bytes"; }

# The mesh backend on a full mesh of N hosts, launched as MLX's users do
# (distcomm-launch --backend jaccl --hostfile FILE): the conformance suite
# passes, and each host sent at least 1 MiB to each peer over their own
# link (an all_sum of 4 MiB in it goes round the ring, pair by pair).
check_mesh_job() { # HOSTFILE N
    local hf=$1 n=$2 i j out=$HOSTS_DIR/mesh.out
    declare -A tx0
    for ((i = 1; i <= n; i++)); do
        for ((j = 1; j <= n; j++)); do
            [ "$i" = "$j" ] || tx0[$i$j]=$(link_tx "$i" "$j")
        done
    done
    echo "real run: distcomm-launch --backend jaccl --hostfile $hf -- mp_conformance --size $n --quick"
    hosts_exec 1 timeout 300 "$BUILD/bin/distcomm-launch" --backend jaccl --hostfile "$hf" \
        --env MLX_RING_VERBOSE=1 -- "$BUILD/tests/mp/mp_conformance" --size "$n" --quick \
        >"$out" 2>&1 || fail "the mesh job failed: $(tail -20 "$out")"
    [ "$(grep -c "checks passed, 0 failed" "$out")" -eq "$n" ] ||
        fail "the mesh job did not pass on $n ranks: $(tail -20 "$out")"
    [ "$(grep -c "mesh ready" "$out")" -eq "$n" ] || fail "not the mesh backend: $(grep ready "$out")"
    for ((i = 1; i <= n; i++)); do
        for ((j = 1; j <= n; j++)); do
            [ "$i" = "$j" ] && continue
            local sent=$(($(link_tx "$i" "$j") - tx0[$i$j]))
            echo "link d$i$j: $sent bytes sent"
            [ "$sent" -ge 1048576 ] || fail "host $i sent only $sent bytes to host $j over d$i$j"
        done
    done
}
