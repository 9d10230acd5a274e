#!/bin/bash
# rendezvous.sh PROBE: strangers at the coordinator of a job with a token
# and DISTCOMM_SECURE=1 (issue 33, M2). Each must leave rank 0's init alone:
#   size   a JOIN claiming another world size (it cannot make the MAC): it
#          is dropped and logged; the real rank 1 then joins (before: rank
#          0 failed with "world size disagreement").
#   flood  300 connections announcing 1 MiB JOINs: rank 0's peak memory
#          stays within 64 MiB of what it was (before: ~300 MiB), and the
#          real rank 1 joins.
#   emfile rank 0 with 40 file descriptors and 120 silent connections: it
#          does not spin on the listener that accept() fails on (CPU time
#          under 0.5 s in 4 s; before: 1.2-1.6 s on a loaded machine), and
#          the real rank 1 joins once they go.
#   insecure  no token, DISTCOMM_INSECURE=1: the same JOIN is dropped too.
#   half   a token on rank 0 only: rank 1 fails at once saying so (rank 0's
#          NONCE says it has one); rank 0 times out naming rank 1.
set -u
probe=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../mp/mp_lib.sh"
unset DISTCOMM_JOB_TOKEN DISTCOMM_INSECURE MLX_RANK MLX_HOSTFILE MLX_WORLD_SIZE \
  DISTCOMM_COORDINATOR MLX_JACCL_COORDINATOR MASTER_ADDR MASTER_PORT
export DISTCOMM_TIMEOUT=30 DISTCOMM_SECURE=1
(umask 077 && printf 'rendezvous-test-token-%s%s\n' "$RANDOM" "$RANDOM" >"$mp_tmp/token")
export DISTCOMM_JOB_TOKEN_FILE=$mp_tmp/token
py=/usr/bin/python3
kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null; }

# rank0 NAME PORT [PREFIX...]: rank 0 in the background (pid in r0).
rank0() {
  local name=$1 port=$2
  shift 2
  env DISTCOMM_COORDINATOR=127.0.0.1:$port MLX_WORLD_SIZE=2 MLX_RANK=0 \
    MLX_RING_VERBOSE=1 "$@" timeout -k 2 60 "$probe" init >"$mp_tmp/$name.0" 2>&1 &
  r0=$!
  mp_pids+=("$r0")
}
# rank1_ok NAME PORT WHAT: the real rank 1 joins and both ranks succeed.
rank1_ok() {
  local name=$1 port=$2 what=$3 out rc rc0
  out=$(DISTCOMM_COORDINATOR=127.0.0.1:$port MLX_WORLD_SIZE=2 MLX_RANK=1 \
    timeout -k 2 60 "$probe" init 2>&1)
  rc=$?
  wait "$r0"
  rc0=$?
  if [ $rc -eq 0 ] && [ $rc0 -eq 0 ] && contains "$(cat "$mp_tmp/$name.0")" "OK rank 0 size 2"; then
    ok "$name: $what, and the real rank 1 joined: $out"
  else
    fail "$name: exits $rc0/$rc: $out / $(grep -v '^\[distcomm' "$mp_tmp/$name.0" | tail -3)"
  fi
}
# the pid of rank 0's probe (under timeout)
probe_pid() { pgrep -P "$1" | head -1; }

# size
p=$(mp_port_base)
rank0 size "$p"
out=$(timeout -k 2 30 $py "$here/rv_stranger.py" size "$p" 2>&1)
if grep -q "world size disagreement" "$mp_tmp/size.0"; then
  fail "size: a stranger's JOIN aborted rank 0: $(tail -1 "$mp_tmp/size.0")"
else
  ok "size: the stranger's JOIN did not fail rank 0 (stranger: $out)"
fi
rank1_ok size "$p" "the stranger's JOIN was dropped"
if grep -q "refused 127.0.0.1:.*MAC" "$mp_tmp/size.0"; then
  ok "size: rank 0 logged: $(grep -m1 refused "$mp_tmp/size.0")"
else
  fail "size: rank 0 did not log the refusal: $(cat "$mp_tmp/size.0")"
fi

# The same without a token, DISTCOMM_INSECURE=1: a JOIN nothing vouches
# for is dropped too, not fatal.
p=$(mp_port_base)
rank0 insecure "$p" env -u DISTCOMM_JOB_TOKEN_FILE -u DISTCOMM_SECURE DISTCOMM_INSECURE=1
out=$(timeout -k 2 30 $py "$here/rv_stranger.py" size "$p" 2>&1)
if grep -q "world size disagreement" "$mp_tmp/insecure.0" &&
  ! grep -q "refused 127.0.0.1:.*world size disagreement" "$mp_tmp/insecure.0"; then
  fail "insecure: a stranger's JOIN aborted rank 0: $(tail -1 "$mp_tmp/insecure.0")"
else
  ok "insecure: the stranger's JOIN was refused (stranger: $out)"
fi
out=$(env -u DISTCOMM_JOB_TOKEN_FILE -u DISTCOMM_SECURE DISTCOMM_INSECURE=1 \
  DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_WORLD_SIZE=2 MLX_RANK=1 \
  timeout -k 2 60 "$probe" init 2>&1)
rc=$?
wait "$r0"
rc0=$?
if [ $rc -eq 0 ] && [ $rc0 -eq 0 ]; then
  ok "insecure: the real rank 1 then joined: $out"
else
  fail "insecure: exits $rc0/$rc: $out / $(tail -2 "$mp_tmp/insecure.0")"
fi

# flood
p=$(mp_port_base)
rank0 flood "$p"
sleep 0.5
pid=$(probe_pid "$r0")
base_kb=$(kb "$pid" VmRSS)
: >"$mp_tmp/flood.s"
exec 7> >(timeout -k 2 60 $py "$here/rv_stranger.py" flood "$p" 300 >"$mp_tmp/flood.s" 2>&1)
for _ in $(seq 100); do grep -q flooded "$mp_tmp/flood.s" && break; sleep 0.3; done
peak_kb=$(kb "$pid" VmHWM)
exec 7>&-
grow=$(((${peak_kb:-0} - ${base_kb:-0}) / 1024))
if [ -n "$base_kb" ] && [ -n "$peak_kb" ] && grep -q flooded "$mp_tmp/flood.s" && [ $grow -lt 64 ]; then
  ok "flood: 300 connections announcing 1 MiB took rank 0's peak memory up $grow MiB (from $((base_kb / 1024)) MiB)"
else
  fail "flood: rank 0 grew $grow MiB (rss ${base_kb:-?} kB, peak ${peak_kb:-?} kB): $(cat "$mp_tmp/flood.s")"
fi
rank1_ok flood "$p" "after the flood"

# emfile
p=$(mp_port_base)
rank0 emfile "$p" prlimit --nofile=40
sleep 0.5
pid=$(probe_pid "$(probe_pid "$r0")")
[ -n "$pid" ] || pid=$(probe_pid "$r0")
: >"$mp_tmp/emfile.s"
exec 7> >(timeout -k 2 60 $py "$here/rv_stranger.py" hold "$p" 120 >"$mp_tmp/emfile.s" 2>&1)
for _ in $(seq 100); do grep -q flooded "$mp_tmp/emfile.s" && break; sleep 0.3; done
t0=$(ticks "$pid")
sleep 4
t1=$(ticks "$pid")
exec 7>&-
hz=$(getconf CLK_TCK)
used=$(((${t1:-0} - ${t0:-0}) * 1000 / hz))
if [ -n "$t0" ] && [ -n "$t1" ] && [ $used -lt 500 ]; then
  ok "emfile: rank 0 used $used ms of CPU in 4 s out of file descriptors"
else
  fail "emfile: rank 0 used ${used} ms of CPU in 4 s (pid ${pid:-?}): $(cat "$mp_tmp/emfile.s")"
fi
rank1_ok emfile "$p" "after running out of file descriptors"

# A token on rank 0 only: rank 1 (none) says so at once, naming the fix;
# rank 0 waits for a rank 1 it can trust until its timeout.
p=$(mp_port_base)
rank0 half "$p" env DISTCOMM_TIMEOUT=4
t0=$(now_ms)
out=$(env -u DISTCOMM_JOB_TOKEN_FILE -u DISTCOMM_SECURE DISTCOMM_COORDINATOR=127.0.0.1:$p \
  MLX_WORLD_SIZE=2 MLX_RANK=1 timeout -k 2 30 "$probe" init 2>&1)
rc=$?
took=$(($(now_ms) - t0))
if [ $rc -eq 3 ] && [ $took -lt 3000 ] && contains "$out" "ERR ERR_CONFIG" \
  "has a job token and rank 1 has none" "DISTCOMM_JOB_TOKEN_FILE"; then
  ok "half: rank 1 without the token failed in $took ms: $out"
else
  fail "half: exit $rc after $took ms: $out"
fi
wait "$r0"
rc0=$?
if [ $rc0 -eq 3 ] && contains "$(cat "$mp_tmp/half.0")" "ERR ERR_TIMEOUT" "missing rank(s) 1"; then
  ok "half: rank 0 timed out waiting for rank 1: $(tail -1 "$mp_tmp/half.0")"
else
  fail "half: rank 0 exit $rc0: $(cat "$mp_tmp/half.0")"
fi
mp_finish
