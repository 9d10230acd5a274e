#!/bin/bash
# flood.sh PROBE STRANGER: set-up under a flood of silent strangers on a
# slow link: rank 1 reaches rank 0 through a relay that delays every chunk
# by 3.5 s, far more than the 0.5 s after which a crowded acceptor drops a
# pending handshake (and less than the 5 s it gives a hello). Rank 1
# connects after 4 of 64 strangers: the 28 that fill the acceptor's 32
# slots and the next 5 push it out (the older silent ones go first); its
# second connection comes after the 32 left in the slots, and the 27
# strangers after it are too few to push it out. Set-up must complete on
# both ranks, rank 1 having dialed again (the acceptor drops
# the silent ones first and only when a newcomer waits; a connector that
# was dropped dials again, and its new connection gets a handshake).
set -u
probe=$1 stranger=$2
. "$(dirname "$0")/../mp/mp_lib.sh"
relay=$(dirname "$0")/../fault/relay.py
unset DISTCOMM_JOB_TOKEN
export DISTCOMM_TIMEOUT=40 DISTCOMM_JOB_ID=f100d DISTCOMM_SOCKETS=1 DISTCOMM_VERBOSE=1
base=$(mp_port_base)
printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' "$base" $((base + 1)) >"$mp_tmp/hf0.json"
# rank 1 reaches rank 0 through the slow relay
printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' $((base + 5)) $((base + 1)) >"$mp_tmp/hf1.json"
/usr/bin/python3 "$relay" $((base + 5)) "127.0.0.1:$base" --delay 3.5 \
  >"$mp_tmp/relay" 2>&1 &
mp_pids+=($!)
wait_for "$mp_tmp/relay" "relay listening" 10 || { fail "relay did not start"; mp_finish; }
MLX_HOSTFILE=$mp_tmp/hf0.json MLX_RANK=0 timeout -k 2 80 "$probe" init \
  >"$mp_tmp/r0" 2>&1 &
r0=$!
mp_pids+=("$r0")
sleep 1
for i in $(seq 1 64); do
  timeout -k 2 40 "$stranger" silent "127.0.0.1:$base" >/dev/null 2>&1 &
  mp_pids+=($!)
  if [ "$i" -eq 4 ]; then
    MLX_HOSTFILE=$mp_tmp/hf1.json MLX_RANK=1 timeout -k 2 80 "$probe" init \
      >"$mp_tmp/r1" 2>&1 &
    r1=$!
    mp_pids+=("$r1")
  fi
  sleep 0.02
done
wait "$r0"; rc0=$?
wait "$r1"; rc1=$?
redials=$(grep -c 'dialing again' "$mp_tmp/r1")
if [ "$redials" -ge 1 ]; then
  ok "rank 1 was dropped and dialed again $redials time(s)"
else
  fail "rank 1 was never dropped: the flood did not reach the redial path"
fi
for r in 0 1; do
  rc=$rc0; [ $r -eq 1 ] && rc=$rc1
  if [ "$rc" -eq 0 ] && grep -q "^OK rank $r size 2" "$mp_tmp/r$r"; then
    ok "rank $r set up through the flood ($(grep -c 'dropped\|refused' "$mp_tmp/r$r") drops/refusals logged)"
  else
    fail "rank $r: exit $rc: $(grep -v '^\[distcomm' "$mp_tmp/r$r" | tail -3) $(grep -m3 'dialing again\|ERR' "$mp_tmp/r$r")"
  fi
done
mp_finish
