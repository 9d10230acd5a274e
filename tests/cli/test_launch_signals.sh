# SIGINT / SIGTERM to the launcher stop every rank and their children,
# remove the hostfile and exit 130 / 143.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# $1: signal, $2: expected status. One rank ignores SIGTERM (needs SIGKILL).
stop_with() {
    local sig=$1 want=$2 d=$T/$1 tpid lpid
    mkdir -p "$d"
    timeout -s KILL 40 "$L" -n 3 -- sh -c '
        echo $$ > "$0/pid.$MLX_RANK"
        sleep 60 & echo $! > "$0/child.$MLX_RANK"
        [ "$MLX_RANK" = 2 ] && trap "" TERM
        cp "$MLX_HOSTFILE" "$0/hostfile.$MLX_RANK"; echo "$MLX_HOSTFILE" > "$0/path"
        while :; do sleep 0.1; done' "$d" 2> "$d/err" &
    tpid=$!
    for _ in $(seq 100); do [ -f "$d/pid.0" ] && [ -f "$d/pid.1" ] && [ -f "$d/pid.2" ] && [ -f "$d/path" ] && break; sleep 0.1; done
    [ -f "$d/pid.2" ] || fail "ranks did not start"
    lpid=$(pgrep -P $tpid)
    [ -n "$lpid" ] || fail "cannot find the launcher's pid"
    [ -e "$(cat "$d/path")" ] || fail "hostfile missing while the job runs"
    kill -"$sig" "$lpid"
    wait $tpid
    local rc=$?
    expect_eq "$rc" "$want" "launcher status after SIG$sig"
    grep -q "received SIG$sig" "$d/err" || fail "no message about SIG$sig: $(cat "$d/err")"
    expect_gone "$d"/pid.* "$d"/child.*
    [ -e "$(cat "$d/path")" ] && fail "hostfile left after SIG$sig"
    return 0
}

stop_with INT 130
stop_with TERM 143
expect_no_hostfile
echo PASS
