# A failing rank stops the whole job: one line names it, the others (and
# their children) are gone, the exit status is the rank's.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# Rank 1 exits 3; the others sleep, rank 0 with a child of its own.
start=$(date +%s)
launch -n 3 -- sh -c '
    echo $$ > "$0.pid.$MLX_RANK"
    if [ "$MLX_RANK" = 0 ]; then sleep 60 & echo $! > "$0.child"; wait; fi
    if [ "$MLX_RANK" = 1 ]; then sleep 0.5; exit 3; fi
    exec sleep 60' "$T/f" 2> "$T/err"
rc=$?
expect_eq "$rc" 3 "launcher exit status"
[ $(( $(date +%s) - start )) -lt 15 ] || fail "stopping the job took too long"
[ "$(grep -c 'distcomm-launch:' "$T/err")" = 1 ] || fail "expected one launcher line: $(cat "$T/err")"
grep -Eq '^distcomm-launch: rank 1 \(pid [0-9]+ on localhost\) exited with status 3; stopping the other ranks$' \
    "$T/err" || fail "unexpected failure line: $(cat "$T/err")"
grep -q "pid $(cat "$T/f.pid.1")" "$T/err" || fail "failure line does not name rank 1's pid"
expect_gone "$T"/f.pid.* "$T/f.child"
expect_no_hostfile

# A rank that ignores SIGTERM is killed after the grace period.
launch -n 2 -- sh -c 'trap "" TERM; echo $$ > "$0.pid.$MLX_RANK"
    if [ "$MLX_RANK" = 1 ]; then sleep 0.5; exit 5; fi
    while :; do sleep 0.1; done' "$T/g" 2> "$T/err2"
expect_eq "$?" 5 "exit status with a rank ignoring SIGTERM"
expect_gone "$T"/g.pid.*

# Rank 2 is killed by SIGKILL: named with the signal, status 128+9.
launch -n 3 -- sh -c 'echo $$ > "$0.pid.$MLX_RANK"
    if [ "$MLX_RANK" = 2 ]; then sleep 0.3; kill -KILL $$; fi
    exec sleep 60' "$T/k" 2> "$T/err3"
expect_eq "$?" 137 "exit status after SIGKILL"
grep -Eq '^distcomm-launch: rank 2 \(pid [0-9]+ on localhost\) was killed by signal 9 \(Killed\)' "$T/err3" \
    || fail "unexpected signal line: $(cat "$T/err3")"
expect_gone "$T"/k.pid.*

# A single failing rank: same status, no mention of other ranks.
launch -n 1 -- sh -c 'exit 7' 2> "$T/err4"
expect_eq "$?" 7 "exit status of a single rank"
grep -Eq '^distcomm-launch: rank 0 \(pid [0-9]+ on localhost\) exited with status 7$' "$T/err4" \
    || fail "unexpected single-rank line: $(cat "$T/err4")"

# Every rank succeeding gives 0 and no launcher message.
launch -n 4 -- true 2> "$T/ok" || fail "successful job exited with $?"
[ -s "$T/ok" ] && fail "launcher printed something on success: $(cat "$T/ok")"
expect_no_hostfile
echo PASS
