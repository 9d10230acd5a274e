# Helpers for the tests/slurm cases (sourced): the cluster of STATE ($1,
# brought up by the slurm.up test), ok/fail/finish, a temp folder $T.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/cluster.sh"
cluster_load "${1:?usage: $0 STATE ...}"
fails=0
ok() { echo "ok - $*"; }
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }
finish() {
    [ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
    echo "all checks passed"
    exit 0
}
T=$(mktemp -d /tmp/dcslurm-test.XXXXXX)
trap 'rm -rf "$T"' EXIT

# The processes on the compute hosts whose command line has $1.
job_left() {
    local i pid
    for ((i = 1; i <= CL_HOSTS; i++)); do
        for pid in $(cl_pids "$i"); do
            grep -qaF -- "$1" "/proc/$pid/cmdline" 2>/dev/null &&
                echo "dcsl$i:$pid:$(tr '\0' ' ' <"/proc/$pid/cmdline")"
        done
    done
}

# Waits up to SECONDS until no process of PROGRAM is left on any host.
expect_none_left() { # seconds program
    local left
    for _ in $(seq $(($1 * 10))); do
        left=$(job_left "$2")
        [ -z "$left" ] && { ok "no process of $(basename "$2") left on any host"; return 0; }
        sleep 0.1
    done
    fail "processes of $(basename "$2") left after $1 s: $left"
}
