# Helpers for the tests/hosts scripts (sourced after lib.sh). Each script
# gets the launcher's path as $1, counts failures and ends with finish.
L=${1:?usage: $0 /path/to/distcomm-launch ...}
fails=0
ok() { echo "ok - $*"; }
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }
finish() {
    [ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
    echo "all checks passed"
    exit 0
}
# A word put on every rank's command line, so that its processes can be found.
MARK=dcmark$$
T=$(mktemp -d /tmp/dchosts-test.XXXXXX)
trap 'rm -rf "$T"' EXIT # hosts_up puts hosts_down in front of this

# 10.99.0.1,...,10.99.0.N
host_list() { seq -s, -f '10.99.0.%g' 1 "$1"; }

# Runs the launcher from host 1 under a time limit (ssh from there reaches all).
launch() {
    local secs=$1
    shift
    hosts_exec 1 timeout -k 5 "$secs" "$L" "$@"
}

# The processes of the job still alive on any host: one that has $MARK on its
# command line or in its environment (run the job with --env DCL_MARK=$MARK:
# what a rank starts inherits it), or an agent. Prints "host pid cmdline".
job_left() {
    local i pid cmd
    for ((i = 1; i <= HOSTS_N; i++)); do
        for pid in $(ip netns pids "${HOSTS_NS[$i]}" 2>/dev/null); do
            cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
            case $cmd in *--remote-agent*) echo "$i $pid $cmd"; continue ;; esac
            if grep -qa "$MARK" "/proc/$pid/cmdline" "/proc/$pid/environ" 2>/dev/null; then
                echo "$i $pid $cmd"
            fi
        done
    done
}

# Waits up to SECONDS for job_left to be empty.
expect_none_left() {
    local secs=$1 left
    for _ in $(seq $((secs * 10))); do
        left=$(job_left)
        [ -z "$left" ] && return 0
        sleep 0.1
    done
    fail "processes of the job left after ${secs}s: $left"
    return 1
}
