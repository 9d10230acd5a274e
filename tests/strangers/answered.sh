#!/bin/bash
# answered.sh PROBE STRANGER: a crowded acceptor keeps a connection it has
# answered. Rank 1 reaches rank 0 through a relay that delays every chunk by
# 1 s, so its handshake is answered about 1 s after it connects and its proof
# comes 2 s later; meanwhile 31 squatters (a correct hello with a token
# offer, then silence) fill the acceptor's other slots, and one more
# connection waits for a slot. Rank 1, the oldest in flight, used to be
# dropped to make room although it had been answered: it counted the
# connection as made, sent its proof and failed on its next read
# ("Connection reset by peer" with 256 ranks on two loaded cores). Set-up
# must complete on both ranks, rank 1 dialing once; the squatters are
# refused, the waiting connection is never let in.
set -u
probe=$1 stranger=$2
. "$(dirname "$0")/../mp/mp_lib.sh"
relay=$(dirname "$0")/../fault/relay.py
unset DISTCOMM_JOB_TOKEN_FILE
export DISTCOMM_TIMEOUT=30 DISTCOMM_JOB_ID=a115e7ed DISTCOMM_SOCKETS=1 \
  DISTCOMM_VERBOSE=1 DISTCOMM_JOB_TOKEN=answered-test-token-0123456789
base=$(mp_port_base)
printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' "$base" $((base + 1)) >"$mp_tmp/hf0.json"
# rank 1 reaches rank 0 through the slow relay
printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' $((base + 5)) $((base + 1)) >"$mp_tmp/hf1.json"
/usr/bin/python3 "$relay" $((base + 5)) "127.0.0.1:$base" --delay 1 \
  >"$mp_tmp/relay" 2>&1 &
mp_pids+=($!)
wait_for "$mp_tmp/relay" "relay listening" 10 || { fail "relay did not start"; mp_finish; }
MLX_HOSTFILE=$mp_tmp/hf0.json MLX_RANK=0 timeout -k 2 60 "$probe" init \
  >"$mp_tmp/r0" 2>&1 &
r0=$!
mp_pids+=("$r0")
sleep 0.5
MLX_HOSTFILE=$mp_tmp/hf1.json MLX_RANK=1 timeout -k 2 60 "$probe" init \
  >"$mp_tmp/r1" 2>&1 &
r1=$!
mp_pids+=("$r1")
sleep 0.2
for i in $(seq 1 31); do
  timeout -k 2 20 "$stranger" squat "127.0.0.1:$base" "$DISTCOMM_JOB_ID" 2 \
    >"$mp_tmp/squat.$i" 2>&1 &
  mp_pids+=($!)
done
# once rank 1 has been answered (about 1 s after it connected) and before
# its proof arrives (about 3 s after): one more connection
sleep 1.3
timeout -k 2 20 "$stranger" silent "127.0.0.1:$base" >"$mp_tmp/late" 2>&1 &
mp_pids+=($!)
wait "$r0"; rc0=$?
wait "$r1"; rc1=$?
for r in 0 1; do
  rc=$rc0; [ $r -eq 1 ] && rc=$rc1
  if [ "$rc" -eq 0 ] && grep -q "^OK rank $r size 2" "$mp_tmp/r$r"; then
    ok "rank $r set up ($(grep -c 'refused a connection' "$mp_tmp/r$r") refusals logged)"
  else
    fail "rank $r: exit $rc: $(grep -v '^\[distcomm' "$mp_tmp/r$r" | tail -3) $(grep -m3 'dialing again\|dropped\|ERR' "$mp_tmp/r$r")"
  fi
done
squats=$(grep -c 'claims rank 1 lane 0\|set-up ended before it finished\|no proof of the job token' "$mp_tmp/r0")
redials=$(grep -c 'dialing again' "$mp_tmp/r1")
[ "$redials" -eq 0 ] || fail "rank 1 dialed again $redials time(s): it was dropped before answering"
accepted=$(grep -c 'accepted rank 1 lane 0' "$mp_tmp/r0")
[ "$accepted" -eq 1 ] || fail "rank 1 accepted $accepted time(s)"
[ "$squats" -ge 31 ] || fail "only $squats squatters refused: $(grep 'refused' "$mp_tmp/r0" | head -3)"
mp_finish
