#!/bin/bash
# no_token_jobs.sh PROBE: two jobs started by hand (MLX_RANK / MLX_HOSTFILE,
# no DISTCOMM_JOB_TOKEN, no DISTCOMM_JOB_ID) whose hostfiles name the same
# port for rank 0. Job B's rank 1 reaches job A's rank 0: the job id (a hash
# of the hostfile) keeps them apart. B's rank 1 is refused with an error
# naming the other job, A's rank 0 logs the refusal, and job A completes.
# A stranger that connects to A's rank 0 and stays silent is dropped after
# 5 s (logged), and A still completes. An impostor reads a refusal (which
# reveals nothing: zeros but the reason) and claims rank 1 with what it
# learned before the real rank 1 comes: refused too.
set -u
probe=$1 stranger=$2
. "$(dirname "$0")/../mp/mp_lib.sh"
unset DISTCOMM_JOB_TOKEN DISTCOMM_JOB_ID
export DISTCOMM_TIMEOUT=20
base=$(mp_port_base)
printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' "$base" $((base + 1)) >"$mp_tmp/a.json"
printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' "$base" $((base + 2)) >"$mp_tmp/b.json"

MLX_HOSTFILE=$mp_tmp/a.json MLX_RANK=0 MLX_RING_VERBOSE=1 \
  timeout -k 2 60 "$probe" init >"$mp_tmp/a0" 2>&1 &
a0=$!
mp_pids+=("$a0")
sleep 0.5 # A's rank 0 listens first; B's rank 0 then cannot (port taken)

out=$(MLX_HOSTFILE=$mp_tmp/b.json MLX_RANK=0 timeout -k 2 30 "$probe" init 2>&1)
if contains "$out" "ERR " "$base" "already"; then
  ok "job B rank 0 cannot take job A's port: $out"
else
  fail "job B rank 0: $out"
fi
out=$(MLX_HOSTFILE=$mp_tmp/b.json MLX_RANK=1 timeout -k 2 30 "$probe" init 2>&1)
rc=$?
if [ $rc -eq 3 ] && contains "$out" "ERR ERR_CONFIG" "refused rank 1's connection" "another job"; then
  ok "job B rank 1 kept out of job A: $out"
else
  fail "job B rank 1: exit $rc: $out"
fi

out=$(timeout -k 2 40 "$stranger" silent "127.0.0.1:$base" 2>&1)
from=$(sed -n 's/^stranger silent from //p' <<<"$out")
if [ -n "$from" ] && contains "$(cat "$mp_tmp/a0")" \
  "refused a connection from $from: it sent nothing within 5 s"; then
  ok "a silent stranger was dropped: $(tail -1 <<<"$out")"
else
  fail "silent stranger: $out / $(cat "$mp_tmp/a0")"
fi

out=$(timeout -k 2 40 "$stranger" impostor "127.0.0.1:$base" 0 2 2>&1)
if [ $? -eq 0 ] && contains "$out" "reveals job 0 group 0 rank 0 size 0 host 0 flags 0 nonce zero (reason 2)" \
  "impostor: refused (reason 2"; then
  ok "an impostor learned nothing from a refusal and was refused: $(grep reveals <<<"$out")"
else
  fail "impostor: $out"
fi

out=$(MLX_HOSTFILE=$mp_tmp/a.json MLX_RANK=1 timeout -k 2 30 "$probe" init 2>&1)
rc=$?
wait "$a0"
rc0=$?
log=$(cat "$mp_tmp/a0")
if [ $rc -eq 0 ] && [ $rc0 -eq 0 ] && contains "$log" "OK rank 0 size 2"; then
  ok "job A completed: $out"
else
  fail "job A: exits $rc0/$rc: $out / $log"
fi
if contains "$log" "refused a connection from 127.0.0.1:" "another job"; then
  ok "job A's rank 0 logged: $(grep refused <<<"$log" | head -1)"
else
  fail "job A's rank 0 did not log the refusal: $log"
fi
mp_finish
