# Runs the example commands of MLX's docs listed in mlx_docs_commands.txt as
# written (host names replaced) and checks what each does.
# Usage: bash mlx_docs.sh launch|config LIST LAUNCHER CONFIG BUILD
#   launch: the mlx.launch lines; remote hosts through a stand-in ssh
#           (DISTCOMM_SSH) that runs the command on this machine
#   config: the mlx.distributed_config lines, on 4 test hosts (network
#           namespaces with sshd, a full mesh of direct links); exits 77
#           (skipped) without root, as tests/config does
# shellcheck disable=SC2317 # mlx.launch / mlx.distributed_config run via eval
set -u
MODE=${1:?usage: $0 launch|config LIST LAUNCHER CONFIG BUILD}
LIST=$(realpath "${2:?}")
L=$(realpath "${3:?}")
C=$(realpath "${4:?}")
B=$(realpath "${5:?}")

if [ "$MODE" = config ]; then
    # shellcheck source=../config/lib.sh
    source "$(dirname "$0")/../config/lib.sh" "$C" "$B" # exits 77 without root
    hosts_up 4
    for i in 1 2 3; do for j in $(seq $((i + 1)) 4); do hosts_link "$i" "$j"; done; done
    W=$HOSTS_DIR
    # MLX's names -> the test hosts' addresses
    HOSTS=(m3-ultra-1=10.99.0.1 m3-ultra-2=10.99.0.2 m3-ultra-3=10.99.0.3 m3-ultra-4=10.99.0.4
        host1=10.99.0.1 host2=10.99.0.2 host3=10.99.0.3 host4=10.99.0.4
        h1=10.99.0.1 h2=10.99.0.2 h3=10.99.0.3)
    mlx.distributed_config() { hosts_exec 1 timeout 60 "$C" "$@"; }
else
    fail() {
        echo "FAIL: $*" >&2
        exit 1
    }
    W=$(mktemp -d "${TMPDIR:-/tmp}/dc-mlxdocs.XXXXXX")
    trap 'rm -rf "$W"' EXIT
    # Remote names -> loopback addresses reached through the stand-in ssh.
    HOSTS=(ip1=127.0.0.2 ip2=127.0.0.3 my-cuda-node=127.0.0.2 linux-1=127.0.0.2 linux-2=127.0.0.3)
    mkdir -p "$W/bin" "$W/py/mlx_lm"
    cat > "$W/bin/fake-ssh" <<'SH'
#!/bin/sh
while [ $# -gt 0 ]; do
    case $1 in -o | -F) shift 2 ;; -*) shift ;; *) break ;; esac
done
shift # the host: this machine
exec sh -c "$*"
SH
    cat > "$W/bin/fake-mpirun" <<'SH'
#!/bin/sh
[ "$1" = --version ] && { echo "mpirun (Open MPI) 5.0.0"; exit 0; }
echo "$*" > "$FAKE_OUT"
SH
    chmod +x "$W/bin/fake-ssh" "$W/bin/fake-mpirun"
    # The docs' "python" and "python3": Debian's (numpy, the built module).
    ln -s /usr/bin/python3 "$W/bin/python"
    ln -s /usr/bin/python3 "$W/bin/python3"
    # The docs' scripts: each rank says who it is, from the library when the
    # Python module was built (else from the launcher's variables).
    cat > "$W/test.py" <<'PY'
import os
try:
    import distcomm
    g = distcomm.init()
    r, n = g.rank(), g.size()
except ImportError:
    r, n = os.environ["MLX_RANK"], os.environ["MLX_WORLD_SIZE"]
print(f"rank {r} of {n}", *__import__("sys").argv[1:])
PY
    cp "$W/test.py" "$W/my_script.py"
    cp "$W/test.py" "$W/py/mlx_lm/__main__.py"
    : > "$W/py/mlx_lm/__init__.py"
    printf '[{"ssh": "127.0.0.2"}, {"ssh": "127.0.0.3"}]\n' > "$W/hosts.json"
    # MLX's mesh hostfile for 4 stand-in hosts, every pair over the loopback.
    /usr/bin/python3 -c '
import json
n = 4
print(json.dumps([{"ssh": "127.0.0.%d" % (i + 2), "ips": ["127.0.0.%d" % (i + 2)],
                   "rdma": [None if j == i else "rdma_lo" for j in range(n)]} for i in range(n)]))
' > "$W/m3-ultra-jaccl.json"
    export PATH=$W/bin:$PATH PYTHONPATH=$W/py:$B/python DISTCOMM_SSH=$W/bin/fake-ssh \
        DISTCOMM_MPIRUN=$W/bin/fake-mpirun FAKE_OUT=$W/mpirun.out
    mlx.launch() { timeout -k 5 60 "$L" "$@"; }
fi
cd "$W" || fail "cd $W"

check() { # EXPECT STATUS: what the command's output ($W/out, $W/err) must show
    local want=${1#*=} st=$2 r
    case $1 in
    ranks=*)
        [ "$st" = 0 ] || return 1
        for ((r = 0; r < want; r++)); do
            grep -q "^rank $r of $want\b" out || return 1
        done
        [ "$(grep -c '^rank ' out)" = "$want" ] ;;
    error=*) [ "$st" = 2 ] && [ "$(wc -l < err)" = 1 ] && grep -qF -- "$want" err ;;
    python) [ "$st" = 0 ] && [ "$(wc -l < out)" = 1 ] && [ -x "$(cat out)" ] && grep -q '^/' out ;;
    mpirun=*) [ "$st" = 0 ] && grep -qF -- "$want" "$FAKE_OUT" ;;
    dot=*) [ "$st" = 0 ] && grep -q '^graph' out && [ "$(grep -c ' -- ' out)" = "$want" ] ;;
    mesh=*)
        [ "$st" = 0 ] && /usr/bin/python3 -c '
import json, sys
h = json.load(open(sys.argv[1]))
assert [x["ssh"] for x in h] == ["10.99.0.%d" % i for i in (1, 2, 3, 4)]
assert all(len(x["rdma"]) == 4 and x["rdma"][i] is None for i, x in enumerate(h))
' "$want" ;;
    *) echo "unknown expectation '$1'" > err; return 1 ;;
    esac
}

tool=mlx.launch
[ "$MODE" = config ] && tool=mlx.distributed_config
n=0
while IFS= read -r line; do
    case $line in '#'* | '') continue ;; esac
    expect=$(echo "${line%%|*}" | sed 's/ *$//')
    cmd=${line#*| }
    case $cmd in "$tool "*) ;; *) continue ;; esac
    run=$cmd
    for m in "${HOSTS[@]}"; do
        run=$(echo "$run" | sed -E "s/(^|[ ,])${m%%=*}([ ,]|$)/\1${m#*=}\2/g; s/(^|[ ,])${m%%=*}([ ,]|$)/\1${m#*=}\2/g")
    done
    echo "== $cmd"
    [ "$run" = "$cmd" ] || echo "   as: $run"
    eval "$run" > out 2> err < /dev/null
    st=$?
    check "$expect" "$st" || fail "'$cmd' (exit $st) is not $expect:
$(cat out err)"
    n=$((n + 1))
done < "$LIST"
[ "$n" -gt 0 ] || fail "no $tool lines in $LIST"
if [ "$MODE" = config ]; then # the docs' next step: a job on that hostfile
    run_job "$W/m3-ultra-jaccl.json" "$B/examples/hello"
    check_hello 4
fi
echo "PASS: $n $tool commands of MLX's docs"
