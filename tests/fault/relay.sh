#!/bin/bash
# relay.sh FAULT_PROBE: 2 ranks over TCP, started by hand, with relay.py
# between them (rank 1's hostfile puts rank 0 at the relay's port, so every
# connection between the two goes through it):
#   a 20 ms delay      -> 3 checked 16 MiB all_sums are right
#   a stall of 10 s    -> with DISTCOMM_TIMEOUT=3 both ranks return
#                         ERR_TIMEOUT naming the other, 2.5..8 s after it began
#   a cut after 8 MiB  -> both return ERR_PEER_LOST naming the other within 2 s
#   a trickle (1 byte  -> with DISTCOMM_TIMEOUT=3 a 1 MiB all_sum: both ranks
#   per 100 ms)           return ERR_TIMEOUT naming the other within 2
#                         timeouts, one of them naming the rate ("too
#                         slow"), (issue 33 L2: alive for 40 s)
set -u
probe=$1
relay="$(dirname "$0")/relay.py"
. "$(dirname "$0")/../mp/mp_lib.sh"
py=/usr/bin/python3
[ -x $py ] || { echo "skip: no /usr/bin/python3"; exit 77; }
export DISTCOMM_SHM=0 DISTCOMM_JOB_ID
DISTCOMM_JOB_ID=$(printf '%04x%04x%04x%04x' $RANDOM $RANDOM $RANDOM $RANDOM)

# start_relay NAME ARGS...: relay on port $rp to rank 0's port $p0.
start_relay() {
  local name=$1
  shift
  $py "$relay" "$rp" "127.0.0.1:$p0" "$@" >"$mp_tmp/relay.$name" 2>&1 &
  relay_pid=$!
  mp_pids+=("$relay_pid")
  wait_for "$mp_tmp/relay.$name" "relay listening" 10 ||
    fail "$name: the relay did not start: $(cat "$mp_tmp/relay.$name")"
}

# ranks NAME TIMEOUT ARGS...: both ranks, rank 1 through the relay; waits.
ranks() {
  local name=$1 tmo=$2 r pids=()
  shift 2
  for r in 0 1; do
    MLX_RANK=$r MLX_HOSTFILE="$mp_tmp/hf$r.json" DISTCOMM_TIMEOUT=$tmo \
      timeout -k 2 60 "$probe" all_sum --mib 16 "$@" >"$mp_tmp/$name.$r" 2>&1 &
    pids+=($!)
    mp_pids+=($!)
  done
  wait "${pids[0]}"; rc0=$?
  wait "${pids[1]}"; rc1=$?
  kill "$relay_pid" 2>/dev/null
  wait "$relay_pid" 2>/dev/null
}

# failed_both NAME STATUS LO HI: each rank's error names the other, in time.
failed_both() {
  local name=$1 want=$2 lo=$3 hi=$4 at since r line late
  since=$(sed -n 's/^relay: [a-z]* at \([0-9.]*\) .*/\1/p' "$mp_tmp/relay.$name")
  [ -n "$since" ] || { fail "$name: the relay never injected its fault"; return; }
  rcs=("$rc0" "$rc1")
  for r in 0 1; do
    line=$(grep "^rank $r: ERR " "$mp_tmp/$name.$r")
    at=$(printf '%s\n' "$line" | sed -n 's/.* at \([0-9.]*\) after .*/\1/p')
    late=$(awk -v a="${at:-0}" -v k="$since" 'BEGIN { printf "%.3f", a - k }')
    if ! contains "$line" "$want" "rank $((1 - r))"; then
      fail "$name: rank $r: want $want naming rank $((1 - r)): $(cat "$mp_tmp/$name.$r")"
    elif ! awk -v l="$late" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(l >= lo && l < hi) }'; then
      fail "$name: rank $r failed $late s after the fault (want $lo..$hi s): $line"
    elif ! grep -q "^rank $r: sticky: " "$mp_tmp/$name.$r"; then
      fail "$name: rank $r: $(grep STICKY "$mp_tmp/$name.$r")"
    elif [ "${rcs[$r]}" -ne 4 ]; then # 4: failed, then freed cleanly
      fail "$name: rank $r exit ${rcs[$r]}: $(cat "$mp_tmp/$name.$r")"
    else
      ok "$name: rank $r after $late s: ${line#*: }"
    fi
  done
}

base=$(mp_port_base)
p0=$base p1=$((base + 1)) rp=$((base + 2))
printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' "$p0" "$p1" >"$mp_tmp/hf0.json"
printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' "$rp" "$p1" >"$mp_tmp/hf1.json"

start_relay delay --delay 0.02
ranks delay 30 --iters 3 --check
if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && grep -q "3 all_sum done, checked" "$mp_tmp/delay.1"; then
  ok "delay 20 ms: 3 checked 16 MiB all_sums right on both ranks"
else
  fail "delay 20 ms: exit $rc0/$rc1: $(cat "$mp_tmp"/delay.*)"
fi

start_relay stall --stall 10 --after $((40 << 20))
ranks stall 3 --linger 0
failed_both stall ERR_TIMEOUT 2.5 8

start_relay cut --cut --after $((40 << 20))
ranks cut 30 --linger 0
failed_both cut ERR_PEER_LOST 0 2

# The deadline must not restart on every byte: a trickle times out too.
# After the first all_sum (2 MiB through the relay), when both ranks are
# past set-up: a trickle during set-up is the handshake's timeout.
start_relay trickle --trickle 0.1 --after $((3 << 20))
ranks trickle 3 --linger 0 --mib 1
failed_both trickle ERR_TIMEOUT 0 7
# The rank that gets the trickle names the rate; its peer, starved in turn
# (it has nothing to pass on), may see no byte at all: "no progress".
grep -q "^rank [01]: ERR ERR_TIMEOUT.*is too slow: .* bytes in .* s, under the 64 KiB/s" \
  "$mp_tmp"/trickle.[01] ||
  fail "trickle: no rank says that its peer is too slow: $(cat "$mp_tmp"/trickle.[01])"
mp_finish
