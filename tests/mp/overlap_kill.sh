#!/bin/bash
# overlap_kill.sh OVERLAP_TEST [shm|tcp]: 3 ranks started by hand (no
# launcher to tear the job down) run the overlapped dc_average_gradients;
# rank 2 SIGKILLs itself with buckets in flight. Ranks 0 and 1 must fail
# the wait with ERR_PEER_LOST naming rank 2 (or a neighbour's relayed
# failure naming it) and exit 4, within the 60 s bound (DISTCOMM_TIMEOUT=10).
set -u
prog=$1
mode=${2:-shm}
. "$(dirname "$0")/mp_lib.sh"
export DISTCOMM_JOB_ID
DISTCOMM_JOB_ID=$(printf '%04x%04x%04x%04x' $RANDOM $RANDOM $RANDOM $RANDOM)
unset DISTCOMM_SHM DISTCOMM_CMA
if [ "$mode" = tcp ]; then export DISTCOMM_SHM=0; fi
n=3
victim=2
base=$(mp_port_base)
mp_hostfile "$mp_tmp/hf.json" $n "$base"
declare -a wrap
for ((r = 0; r < n; r++)); do
  (MLX_RANK=$r MLX_HOSTFILE="$mp_tmp/hf.json" DISTCOMM_TIMEOUT=10 \
    timeout -k 2 60 "$prog" kill >"$mp_tmp/out$r" 2>&1
   exit $?) 2>/dev/null &
  wrap[r]=$!
  mp_pids+=($!)
done
for ((r = 0; r < n; r++)); do
  wait "${wrap[$r]}"
  rc=$?
  out=$(cat "$mp_tmp/out$r")
  if [ $r -eq $victim ]; then
    if [ $rc -eq 137 ]; then ok "rank $r killed itself"; else fail "rank $r: exit $rc, want 137: $out"; fi
    continue
  fi
  line=$(grep "rank $r: ERR " "$mp_tmp/out$r")
  if [ $rc -ne 4 ]; then
    fail "rank $r: exit $rc, want 4: $out"
  elif ! contains "$line" "ERR_" "rank $victim"; then
    fail "rank $r: want an error naming rank $victim: $line"
  else
    ok "rank $r: $line"
  fi
done
mp_finish
