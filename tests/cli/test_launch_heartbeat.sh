# A launcher that falls silent without closing its connection (a network
# partition; here: the launcher stopped with SIGSTOP, so ssh's channel stays
# open) is noticed by each host's agent through the missing heartbeats
# (DISTCOMM_HEARTBEAT_MS, 20 missed beats): the agent stops its ranks' whole
# process groups and exits, in bounded time, instead of leaving them running
# until TCP gives up. Remote hosts through a stand-in ssh, as test_launch_hosts.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/bin"
cat > "$T/bin/fake-ssh" <<'SH'
#!/bin/sh
while [ $# -gt 0 ]; do
    case $1 in -o | -F) shift 2 ;; --) shift; break ;; -*) shift ;; *) break ;; esac
done
shift
exec sh -c "$*"
SH
chmod +x "$T/bin/fake-ssh"
export DISTCOMM_SSH="$T/bin/fake-ssh"

# A healthy job longer than the agent's deadline (20 x 200 ms) is not
# stopped. (100 ms beats, a 2 s deadline, once stopped this job in a CI run
# beside valgrind and a busy host: the launcher got no core for 2.1 s.)
DISTCOMM_HEARTBEAT_MS=200 launch --hosts 127.0.0.2 -- sh -c 'sleep 5; echo done' > "$T/o0" 2> "$T/e0"
expect_eq "$?" 0 "a 5 s job with 200 ms heartbeats: $(cat "$T/e0")"
expect_eq "$(cat "$T/o0")" "done" "its output"

# The launcher stopped: its ranks (and what they started) end within ~2 s.
DISTCOMM_HEARTBEAT_MS=100 timeout -k 5 40 "$L" -n 2 --hosts 127.0.0.2,127.0.0.3 -- sh -c '
    echo $$ > "$0.pid.$MLX_RANK"
    sleep 60 & echo $! > "$0.child.$MLX_RANK"; wait' "$T/r" > /dev/null 2> "$T/e" &
lpid=$!
for _ in $(seq 100); do
    [ "$(ls "$T"/r.child.* 2>/dev/null | wc -l)" -eq 4 ] && break
    sleep 0.1
done
expect_eq "$(ls "$T"/r.child.* 2>/dev/null | wc -l)" 4 "ranks started"
lnch=$(pgrep -P "$lpid" -x distcomm-launch) || fail "no launcher under timeout $lpid"
kill -STOP "$lnch"
stopped=$(date +%s%N)
gone=
for _ in $(seq 60); do # 6 s at most
    left=
    for pid in $(cat "$T"/r.pid.* "$T"/r.child.*); do
        alive "$pid" && left="$left $pid"
    done
    [ -z "$left" ] && { gone=$(date +%s%N); break; }
    sleep 0.1
done
kill -CONT "$lnch"
kill -TERM "$lnch" 2> /dev/null
wait "$lpid" 2> /dev/null
[ -n "$gone" ] || fail "ranks still running 6 s after the launcher fell silent:$left"
ms=$(((gone - stopped) / 1000000))
[ "$ms" -lt 4000 ] || fail "the ranks took $ms ms to stop"
grep -q "no heartbeat from the launcher for" "$T/e" || fail "the agents did not say why: $(cat "$T/e")"

# A rank that does not read its stdin must not switch the heartbeat off: with
# 8 MiB of stdin waiting (more than a rank's queue), the launcher stopped, the
# ranks still end within ~2 s (issue 33, M3: they ran on 6 s and more).
rm -f "$T"/r.*
head -c 8388608 /dev/zero | DISTCOMM_HEARTBEAT_MS=100 timeout -k 5 40 "$L" \
    --hosts 127.0.0.2 -- sh -c '
    echo $$ > "$0.pid.$MLX_RANK"
    sleep 60 & echo $! > "$0.child.$MLX_RANK"; wait' "$T/r" > /dev/null 2> "$T/e2" &
lpid=$!
for _ in $(seq 100); do
    [ "$(ls "$T"/r.child.* 2>/dev/null | wc -l)" -eq 1 ] && break
    sleep 0.1
done
expect_eq "$(ls "$T"/r.child.* 2>/dev/null | wc -l)" 1 "the rank started"
sleep 1 # the launcher fills the rank's queue
lnch=$(pgrep -P "$lpid" -x distcomm-launch) || fail "no launcher under timeout $lpid"
kill -STOP "$lnch"
stopped=$(date +%s%N)
gone=
for _ in $(seq 60); do # 6 s at most
    left=
    for pid in $(cat "$T"/r.pid.* "$T"/r.child.*); do
        alive "$pid" && left="$left $pid"
    done
    [ -z "$left" ] && { gone=$(date +%s%N); break; }
    sleep 0.1
done
kill -CONT "$lnch"
kill -TERM "$lnch" 2> /dev/null
wait "$lpid" 2> /dev/null
[ -n "$gone" ] || fail "with its stdin queue full, the rank still ran 6 s after the launcher fell silent:$left"
ms=$(((gone - stopped) / 1000000))
[ "$ms" -lt 4000 ] || fail "with its stdin queue full, the rank took $ms ms to stop"
grep -q "no heartbeat from the launcher for" "$T/e2" || fail "the agent did not say why: $(cat "$T/e2")"

# And a healthy launcher's heartbeats get past a full queue: a rank that
# reads its 8 MiB only after 1.5 times the deadline (20 x 200 ms, as the
# healthy job above) is not stopped, and gets every byte.
out=$(head -c 8388608 /dev/zero | DISTCOMM_HEARTBEAT_MS=200 timeout -k 5 60 "$L" \
    --hosts 127.0.0.2 -- sh -c 'sleep 6; wc -c' 2> "$T/e3")
expect_eq "$?" 0 "a rank that reads its stdin late: $(cat "$T/e3")"
expect_eq "$(echo $out)" 8388608 "the bytes the late reader got"
echo PASS
