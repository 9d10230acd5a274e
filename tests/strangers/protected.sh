#!/bin/bash
# protected.sh PROBE [LAUNCH]: protected mode (issue 33, H1 and H2). A job
# without a job token lets in only this host's processes of this user,
# checked by the kernel for TCP too (NETLINK_SOCK_DIAG), not by the source
# address.
#   H1: a coordinator job without a token; a process of another user
#       (nobody) joins as rank 1 before the real rank 1: it is refused, and
#       the real rank 1 gets in.
#   H2: a hostfile job without a token, over TCP (DISTCOMM_SHM=0); user
#       nobody runs rank 1 with the same hostfile (anyone can rebuild it from
#       /proc/net/unix): refused; the real rank 1 gets in.
#   A job whose ranks span hosts refuses to start without a token, with one
#   error that says how to give one; DISTCOMM_INSECURE=1 opts out, and rank 0
#   then says so on stderr even when not verbose.
# Needs root (to run a process as nobody); skipped (exit 77) otherwise.
set -u
probe=$1
. "$(dirname "$0")/../mp/mp_lib.sh"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
  echo "skip: needs root and setpriv"
  exit 77
fi
unset DISTCOMM_JOB_TOKEN DISTCOMM_JOB_TOKEN_FILE DISTCOMM_JOB_ID DISTCOMM_INSECURE \
  MLX_RANK MLX_HOSTFILE MLX_WORLD_SIZE DISTCOMM_COORDINATOR MLX_JACCL_COORDINATOR \
  MASTER_ADDR MASTER_PORT RANK WORLD_SIZE
export DISTCOMM_TIMEOUT=20
chmod 755 "$mp_tmp" # nobody reads the hostfile, as it could rebuild it
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
if ! as_nobody test -x "$probe"; then
  echo "skip: user nobody cannot run $probe"
  exit 77
fi

# One job of two ranks: rank 0 (verbose), then nobody's rank 1 with the
# same settings, which must be kept out, then the real rank 1, which must
# get in; rank 0's log must name the refusal.
# keep_out NAME SETTINGS LOGGED...: rank 0's log holds each LOGGED.
keep_out() {
  local name=$1 settings=$2 out rc rc0 log r0
  shift 2
  env $settings MLX_RANK=0 MLX_RING_VERBOSE=1 timeout -k 2 60 "$probe" init \
    >"$mp_tmp/$name.0" 2>&1 &
  r0=$!
  mp_pids+=("$r0")
  sleep 0.5
  out=$(env $settings MLX_RANK=1 DISTCOMM_TIMEOUT=4 timeout -k 2 30 \
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$probe" init 2>&1)
  rc=$?
  if [ $rc -ne 0 ] && ! contains "$out" "OK rank"; then
    ok "$name: nobody's rank 1 was kept out: $out"
  else
    fail "$name: nobody joined as rank 1 (exit $rc): $out"
  fi
  out=$(env $settings MLX_RANK=1 timeout -k 2 30 "$probe" init 2>&1)
  rc=$?
  wait "$r0"
  rc0=$?
  log=$(cat "$mp_tmp/$name.0")
  if [ $rc -eq 0 ] && [ $rc0 -eq 0 ] && contains "$out" "OK rank 1 size 2" &&
    contains "$log" "OK rank 0 size 2"; then
    ok "$name: the real rank 1 got in: $out"
  else
    fail "$name: the real rank 1: exits $rc0/$rc: $out / $log"
  fi
  if contains "$log" "$@"; then
    ok "$name: rank 0 logged: $(grep refused <<<"$log" | head -1)"
  else
    fail "$name: rank 0 did not log the refusal: $log"
  fi
}

# H1: a coordinator job.
keep_out "H1 (coordinator)" \
  "DISTCOMM_COORDINATOR=127.0.0.1:$(mp_port_base) MLX_WORLD_SIZE=2 DISTCOMM_SHM=0" \
  "refused 127.0.0.1:" "no job token"

# H2: a hostfile job over TCP.
base=$(mp_port_base)
mp_hostfile "$mp_tmp/h.json" 2 "$base"
chmod 644 "$mp_tmp/h.json"
keep_out "H2 (hostfile, TCP)" "MLX_HOSTFILE=$mp_tmp/h.json DISTCOMM_SHM=0" \
  "refused a connection from 127.0.0.1:"

# A job whose ranks span hosts (an address not on this host: TEST-NET-1)
# refuses to start without a token, at once, saying how to give one.
printf '[["127.0.0.1:%d"],["192.0.2.1:%d"]]\n' "$base" $((base + 1)) >"$mp_tmp/far.json"
t0=$(now_ms)
out=$(MLX_HOSTFILE=$mp_tmp/far.json MLX_RANK=0 timeout -k 2 30 "$probe" init 2>&1)
rc=$?
if [ $rc -eq 3 ] && [ $(($(now_ms) - t0)) -lt 5000 ] &&
  contains "$out" "ERR ERR_CONFIG" "span hosts" "no job token" "distcomm-launch" \
    "DISTCOMM_JOB_TOKEN_FILE" "DISTCOMM_INSECURE=1"; then
  ok "a multi-host job without a token refuses to start: $out"
else
  fail "multi-host job without a token: exit $rc: $out"
fi
out=$(DISTCOMM_COORDINATOR=192.0.2.1:$base MLX_WORLD_SIZE=2 MLX_RANK=1 \
  timeout -k 2 30 "$probe" init 2>&1)
rc=$?
if [ $rc -eq 3 ] && contains "$out" "ERR ERR_CONFIG" "another host" "no job token" \
  "DISTCOMM_INSECURE=1"; then
  ok "a rank whose coordinator is on another host refuses to start: $out"
else
  fail "remote coordinator without a token: exit $rc: $out"
fi

# DISTCOMM_INSECURE=1: the same job gets past the check (it then waits for
# a rank that is not there), and rank 0 says once, not verbose, what it means.
out=$(MLX_HOSTFILE=$mp_tmp/far.json MLX_RANK=0 DISTCOMM_INSECURE=1 \
  DISTCOMM_TIMEOUT=2 timeout -k 2 30 "$probe" init 2>&1)
n=$(grep -c "anyone who reaches this job's addresses may join" <<<"$out")
if [ "$n" -eq 1 ] && ! contains "$out" "span hosts"; then
  ok "DISTCOMM_INSECURE=1 opts out, said once: $(head -1 <<<"$out")"
else
  fail "DISTCOMM_INSECURE=1: said $n time(s): $out"
fi
mp_finish
