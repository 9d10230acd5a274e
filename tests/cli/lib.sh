# Helpers sourced by the test_launch_*.sh scripts.
# Usage: bash test_launch_x.sh /path/to/distcomm-launch
set -u

L=${1:?usage: $0 /path/to/distcomm-launch}
[ -x "$L" ] || { echo "FAIL: $L is not executable" >&2; exit 1; }
# Every temporary thing of a test lives in $T; the launcher's hostfile too
# (TMPDIR), so that "nothing left behind" can be checked.
T=$(mktemp -d "${TMPDIR:-/tmp}/dcl-cli.XXXXXX")
export TMPDIR=$T/tmp
mkdir -p "$TMPDIR"
trap 'rm -rf "$T"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# Runs the launcher under a time limit so that a hang fails instead of blocking.
launch() {
    timeout -k 5 40 "$L" "$@"
}

# True while the process exists and is not a zombie (a zombie whose parent is
# gone may never be reaped inside a container).
alive() {
    [ -r "/proc/$1/stat" ] || return 1
    local state
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# Waits up to 3 s for every pid written in the files given as arguments to be gone.
expect_gone() {
    local pid left
    for _ in $(seq 30); do
        left=
        # shellcheck disable=SC2013 # the files hold one pid each
        for pid in $(cat "$@" 2>/dev/null); do
            alive "$pid" && left="$left $pid"
        done
        [ -z "$left" ] && return 0
        sleep 0.1
    done
    fail "processes still running:$left"
}

# The launcher's temporary hostfile must be gone once it has exited.
expect_no_hostfile() {
    local left
    left=$(ls -A "$TMPDIR")
    [ -z "$left" ] || fail "left behind in TMPDIR: $left"
}

expect_eq() {
    [ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"
}

# fake_ssh: a stand-in ssh at $FAKE_SSH (for DISTCOMM_SSH) that drops ssh's
# options and the host name and runs the command here, so that the remote
# path (the agent, its wire) is tested without sshd.
fake_ssh() {
    FAKE_SSH=$T/bin/fake-ssh
    mkdir -p "$T/bin"
    cat > "$FAKE_SSH" <<'SH'
#!/bin/sh
while [ $# -gt 0 ]; do
    case $1 in -o | -F) shift 2 ;; --) shift; break ;; -*) shift ;; *) break ;; esac
done
shift
exec sh -c "$*"
SH
    chmod +x "$FAKE_SSH"
}
