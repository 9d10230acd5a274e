#!/bin/bash
# unix_twin.sh PROBE STRANGER: same-host ranks connect over the Unix socket
# beside each TCP port ("@distcomm/IP:PORT"), guarded as the port is. In a
# job without a token, a process of another user that claims rank 1 there
# is refused (the kernel says who connected, not an address) and set-up
# goes on; the real rank 1 connects by the Unix socket; once set-up is
# over the name is gone. A name that another process holds fails rank 0 at
# once with one line naming it, and rank 1, which reaches the squatter,
# gives up within its timeout. The other-user part needs root and setpriv.
set -u
probe=$1 stranger=$2
. "$(dirname "$0")/../mp/mp_lib.sh"
unset DISTCOMM_JOB_TOKEN DISTCOMM_JOB_TOKEN_FILE
export DISTCOMM_TIMEOUT=20 DISTCOMM_JOB_ID=7a1 DISTCOMM_SOCKETS=1
base=$(mp_port_base)
mp_hostfile "$mp_tmp/hf.json" 2 "$base"
twin="@distcomm/127.0.0.1:$base"

MLX_HOSTFILE=$mp_tmp/hf.json MLX_RANK=0 MLX_RING_VERBOSE=1 \
  timeout -k 2 60 "$probe" init --idle 4 >"$mp_tmp/r0" 2>&1 &
r0=$!
mp_pids+=("$r0")
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  # a copy that user 65534 can reach, wherever the build tree lives
  chmod 755 "$mp_tmp" && cp "$stranger" "$mp_tmp/stranger" && chmod 755 "$mp_tmp/stranger"
  out=$(timeout -k 2 40 setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$mp_tmp/stranger" no-token "$twin" 7a1 2 2>&1)
  if contains "$out" "refused (reason" "only this host's processes of this user" \
    "closed by the rank"; then
    ok "another user's process claiming rank 1 on the Unix socket: $(grep refused <<<"$out")"
  else
    fail "another user on the Unix socket: $out"
  fi
else
  ok "skipped the other-user check (needs root and setpriv)"
fi

out=$(MLX_HOSTFILE=$mp_tmp/hf.json MLX_RANK=1 MLX_RING_VERBOSE=1 \
  timeout -k 2 30 "$probe" init 2>&1)
rc=$?
if [ $rc -eq 0 ] && contains "$out" "OK rank 1 size 2" \
  "connected to rank 0 lane 0 at 127.0.0.1:$base by its Unix socket"; then
  ok "rank 1 connected by rank 0's Unix socket"
else
  fail "rank 1: exit $rc: $out"
fi
wait_for "$mp_tmp/r0" "^OK rank 0" 10 || fail "rank 0 did not set up: $(cat "$mp_tmp/r0")"
if grep -q "refused a connection from unix socket of pid [0-9]* uid 65534" "$mp_tmp/r0" ||
  [ "$(id -u)" -ne 0 ]; then
  ok "rank 0 logged: $(grep -m1 refused "$mp_tmp/r0")"
else
  fail "rank 0 did not log the refusal: $(cat "$mp_tmp/r0")"
fi
out=$(timeout -k 2 10 "$stranger" closed "$twin" 2>&1)
if contains "$out" "connection refused"; then
  ok "after set-up the Unix socket is closed: $out"
else
  fail "after set-up: $out"
fi
wait "$r0" || fail "rank 0 exited $?: $(cat "$mp_tmp/r0")"

# A squatter on rank 0's Unix name.
base=$(mp_port_base)
mp_hostfile "$mp_tmp/hf2.json" 2 "$base"
/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(b"\0" + sys.argv[1].encode())
s.listen()
print("listening", flush=True)
time.sleep(30)' "distcomm/127.0.0.1:$base" >"$mp_tmp/squat" 2>&1 &
mp_pids+=($!)
wait_for "$mp_tmp/squat" listening 10 || fail "the squatter did not listen"
export MLX_HOSTFILE=$mp_tmp/hf2.json DISTCOMM_TIMEOUT=3
t0=$(now_ms)
out=$(MLX_RANK=0 timeout -k 2 20 "$probe" init 2>&1)
rc=$? dt=$(($(now_ms) - t0))
if [ $rc -eq 3 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && [ "$dt" -lt 3000 ] &&
  contains "$out" "ERR " "rank 0" "distcomm/127.0.0.1:$base" "another process holds this name"; then
  ok "rank 0 ($dt ms): $out"
else
  fail "rank 0 with its Unix name taken: exit $rc after $dt ms: $out"
fi
t0=$(now_ms)
out=$(MLX_RANK=1 timeout -k 2 20 "$probe" init 2>&1)
rc=$? dt=$(($(now_ms) - t0))
if [ $rc -eq 3 ] && [ "$dt" -lt 7000 ] && contains "$out" "ERR " "rank 0"; then
  ok "rank 1 gave up ($dt ms): $out"
else
  fail "rank 1 against the squatter: exit $rc after $dt ms: $out"
fi
mp_finish
