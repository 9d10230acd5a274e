#!/bin/bash
# interrupt.sh LAUNCHER: Ctrl-C (SIGINT to the launcher) while 4 ranks run on
# 2 hosts, each rank with a child that ignores SIGTERM: the launcher exits 130
# and every process of the job, on every host, is gone within a few seconds.
# Then the same with SIGKILL, which the launcher cannot handle: its ssh
# processes die with it, and the agents stop the ranks on their own.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/checks.sh"
hosts_up 2 || { fail "the test hosts did not come up"; finish; }
prog='sh -c "trap \"\" TERM; sleep 300" & echo "rank $MLX_RANK up"; wait'
# run_and_signal SIG STATUS: starts the job, waits for 4 ranks, sends SIG.
run_and_signal() {
    local sig=$1 want=$2 pid watchdog start rc
    # The job's shell truncates out only once it runs: the last run's lines
    # must not count for this one.
    rm -f "$T/out"
    # Not through a shell function: $! must be the launcher (ip netns exec execs it).
    ip netns exec "${HOSTS_NS[1]}" "$L" -n 2 --hosts "$(host_list 2)" --env DCL_MARK="$MARK" \
        -- sh -c "$prog" </dev/null >"$T/out" 2>&1 &
    pid=$!
    # A watchdog in case the signal does not stop it; its output is not ctest's pipe.
    (sleep 60 && kill -9 "$pid") >/dev/null 2>&1 &
    watchdog=$!
    for _ in $(seq 200); do
        [ "$(grep -c ' up$' "$T/out" 2>/dev/null)" = 4 ] && break
        sleep 0.1
    done
    [ "$(grep -c ' up$' "$T/out" 2>/dev/null)" = 4 ] && ok "4 ranks up" || fail "ranks did not start: $(cat "$T/out")"
    start=$(date +%s%N)
    kill -"$sig" "$pid"
    wait "$pid"
    rc=$?
    kill "$watchdog" 2>/dev/null
    cat "$T/out"
    [ $rc -eq "$want" ] && ok "SIG$sig: launcher exited $want" || fail "SIG$sig: launcher exited $rc, expected $want"
    expect_none_left 5 && ok "every process of the job gone $((($(date +%s%N) - start) / 1000000)) ms after SIG$sig"
}

run_and_signal INT 130
run_and_signal KILL 137
finish
