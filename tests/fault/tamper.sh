#!/bin/bash
# tamper.sh FAULT_PROBE: an on-path attacker flips one bit of a payload byte
# (relay.py --flip) between 2 ranks over TCP, started by hand with the same
# job token (rank 1's hostfile puts rank 0 at the relay's port):
#   DISTCOMM_SECURE=1, no flip -> 3 checked 16 MiB all_sums right on both
#                                 (the relay itself breaks nothing)
#   no DISTCOMM_SECURE, flip   -> the token proofs do not cover the data:
#                                 the altered byte goes through, a rank sees
#                                 a WRONG sum and no error (why SECURE exists)
#   DISTCOMM_SECURE=1, flip    -> the receiving rank fails with ERR_AUTH
#                                 naming the sender and the op ("MAC does not
#                                 match"), the other rank fails too, and no
#                                 rank returns a wrong sum
#   DISTCOMM_SECURE=1, flip in    -> ERR_AUTH, and not one byte of the frame
#   a 1 MiB send (sendrecv,          reached the receiver's buffer (filled
#   --sentinel)                      with a sentinel): a frame goes in 64 KiB
#                                    records, each checked before it is
#                                    copied (issue 33: the payload was
#                                    written before its tag was checked)
set -u
probe=$1
relay="$(dirname "$0")/relay.py"
. "$(dirname "$0")/../mp/mp_lib.sh"
py=/usr/bin/python3
[ -x $py ] || { echo "skip: no /usr/bin/python3"; exit 77; }
[ -e /usr/lib/x86_64-linux-gnu/libsodium.so.23 ] || ls /usr/lib/*/libsodium.so.23 >/dev/null 2>&1 ||
  { echo "skip: no libsodium.so.23"; exit 77; }
export DISTCOMM_SHM=0 DISTCOMM_JOB_ID DISTCOMM_JOB_TOKEN
DISTCOMM_JOB_ID=$(printf '%04x%04x%04x%04x' $RANDOM $RANDOM $RANDOM $RANDOM)
DISTCOMM_JOB_TOKEN=tamper-test-$DISTCOMM_JOB_ID-$RANDOM$RANDOM
flip_at=$(((1 << 20) + 12345)) # inside the first all_sum's payload

start_relay() {
  local name=$1
  shift
  $py "$relay" "$rp" "127.0.0.1:$p0" "$@" >"$mp_tmp/relay.$name" 2>&1 &
  relay_pid=$!
  mp_pids+=("$relay_pid")
  wait_for "$mp_tmp/relay.$name" "relay listening" 10 ||
    fail "$name: the relay did not start: $(cat "$mp_tmp/relay.$name")"
}

# pair NAME SETTINGS ARGS...: both ranks (rank 1 through the relay) run
# the probe with ARGS under the SETTINGS variables; waits, then stops the
# relay. rc0/rc1, out0/out1.
pair() {
  local name=$1 settings=$2 r pids=()
  shift 2
  for r in 0 1; do
    env $settings MLX_RANK=$r MLX_HOSTFILE="$mp_tmp/hf$r.json" DISTCOMM_TIMEOUT=20 \
      timeout -k 2 60 "$probe" "$@" --linger 0 >"$mp_tmp/$name.$r" 2>&1 &
    pids+=($!)
    mp_pids+=($!)
  done
  wait "${pids[0]}"; rc0=$?
  wait "${pids[1]}"; rc1=$?
  kill "$relay_pid" 2>/dev/null
  wait "$relay_pid" 2>/dev/null
  out0=$(cat "$mp_tmp/$name.0") out1=$(cat "$mp_tmp/$name.1")
}

# ranks NAME SECURE: 3 checked 16 MiB all_sums.
ranks() { pair "$1" "DISTCOMM_SECURE=$2" all_sum --mib 16 --iters 3 --check; }

# sendrecv_ranks NAME: SECURE, one 1 MiB send from rank 0 to rank 1 into a
# buffer full of a sentinel; one connection, so that the flip is in that
# frame (not in another lane's, whose good records are written).
sendrecv_ranks() {
  pair "$1" "DISTCOMM_SOCKETS=1 DISTCOMM_SECURE=1" sendrecv --mib 1 --iters 1 --sentinel
}

flipped() { grep -q "relay: flip at" "$mp_tmp/relay.$1"; }

base=$(mp_port_base)
p0=$base p1=$((base + 1)) rp=$((base + 2))
printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' "$p0" "$p1" >"$mp_tmp/hf0.json"
printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' "$rp" "$p1" >"$mp_tmp/hf1.json"

start_relay clean
ranks clean 1
if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && contains "$out0$out1" \
  "rank 0: 3 all_sum done, checked" "rank 1: 3 all_sum done, checked"; then
  ok "DISTCOMM_SECURE=1 through the relay: 3 checked all_sums right on both"
else
  fail "DISTCOMM_SECURE=1 through the relay: exit $rc0/$rc1: $out0 $out1"
fi

start_relay plain --flip --after $flip_at
ranks plain 0
if ! flipped plain; then
  fail "no SECURE, flip: the relay never flipped: $(cat "$mp_tmp/relay.plain")"
elif contains "$out0$out1" "WRONG all_sum" && ! contains "$out0$out1" "ERR"; then
  ok "no SECURE, flip: the altered byte went through unnoticed by the library: $(grep -h WRONG "$mp_tmp"/plain.* | head -1)"
else
  fail "no SECURE, flip: want a WRONG sum and no error: exit $rc0/$rc1: $out0 $out1"
fi

start_relay secure --flip --after $flip_at
ranks secure 1
# The rank that found the bad tag (its error is its own, not a peer's
# abort) must name the sender and the op; the other must carry its abort.
auth=$(grep -h "ERR ERR_AUTH" "$mp_tmp"/secure.* | grep "MAC does not match" |
  grep -v "failed: " | head -1)
r=${auth%%:*}
r=${r#rank }
if ! flipped secure; then
  fail "SECURE, flip: the relay never flipped: $(cat "$mp_tmp/relay.secure")"
elif contains "$out0$out1" "WRONG" || contains "$out0$out1" "done"; then
  fail "SECURE, flip: a rank returned a result: $out0 $out1"
elif [ $rc0 -eq 0 ] || [ $rc1 -eq 0 ]; then
  fail "SECURE, flip: exit $rc0/$rc1, want both failed: $out0 $out1"
elif [ -z "$auth" ] || ! contains "$auth" "rank $((1 - r)) (127.0.0.1:" \
  "sent a frame of all_sum of" "whose MAC does not match (DISTCOMM_SECURE)"; then
  fail "SECURE, flip: no ERR_AUTH naming the sender, the op and the MAC: $out0 $out1"
elif ! grep -h "^rank $((1 - r)): ERR ERR_AUTH" "$mp_tmp"/secure.* |
  grep -q "rank $r (127.0.0.1:[0-9]*) failed: .*MAC does not match"; then
  fail "SECURE, flip: rank $((1 - r)) did not fail with rank $r's abort: $out0 $out1"
else
  ok "SECURE, flip: ${auth#*: }"
  ok "SECURE, flip: the other rank: $(grep -h "^rank $((1 - r)): ERR" "$mp_tmp"/secure.*)"
fi

# Early in rank 0's 1 MiB frame to rank 1 (past the handshakes): rank 1's
# buffer must still hold only the sentinel.
start_relay sentinel --flip --after 8192
sendrecv_ranks sentinel
if ! flipped sentinel; then
  fail "SECURE, flip, sentinel: the relay never flipped: $(cat "$mp_tmp/relay.sentinel")"
elif ! contains "$out1" "rank 1: ERR ERR_AUTH" "MAC does not match" \
  "rank 1: receive buffer: 0 bytes changed"; then
  fail "SECURE, flip, sentinel: want rank 1's ERR_AUTH with its buffer untouched: exit $rc0/$rc1: $out0 $out1"
else
  ok "SECURE, flip, sentinel: $(grep -h "^rank 1: receive buffer" "$mp_tmp/sentinel.1"): $(grep -h "^rank 1: ERR" "$mp_tmp/sentinel.1")"
fi
mp_finish
