#!/bin/bash
# async_kill.sh ASYNC_TEST [shm|tcp|stop]: 4 ranks started by hand (no
# launcher, so nothing else tears the job down) keep 4 non-blocking all_sums
# of 16 MiB in flight; rank 2 is SIGKILLed. Every survivor's first failed
# request must say ERR_PEER_LOST naming rank 2 within 3 s of the kill, every
# request behind it must fail alike, a new request must fail at once, and
# the rank must free its group and exit 4. stop: rank 2 is SIGSTOPped
# instead (the group timeout set to 2 s after the first round): the
# survivors fail within 8 s (the timeout and room for a loaded or
# sanitized run) with ERR_TIMEOUT naming rank 2, or a neighbour's relayed
# failure naming it, or naming a survivor whose own failure names rank 2
# (each rank of the ring only knows whom it waited for).
set -u
prog=$1
mode=${2:-shm}
. "$(dirname "$0")/mp_lib.sh"
export DISTCOMM_JOB_ID
DISTCOMM_JOB_ID=$(printf '%04x%04x%04x%04x' $RANDOM $RANDOM $RANDOM $RANDOM)
unset DISTCOMM_SHM DISTCOMM_CMA
if [ "$mode" = tcp ]; then export DISTCOMM_SHM=0; fi
timeout_s=30 want=ERR_PEER_LOST sig=-9 slack=3.0 after=
# stop: the 2 s timeout starts after the first round (under TSan on a busy
# host that round once went 2 s without progress before any stop)
if [ "$mode" = stop ]; then after=2 want=ERR_ ; sig=-STOP slack=8.0; fi
n=4
victim=2
base=$(mp_port_base)
mp_hostfile "$mp_tmp/hf.json" $n "$base"

declare -a wrap
for ((r = 0; r < n; r++)); do
  (MLX_RANK=$r MLX_HOSTFILE="$mp_tmp/hf.json" DISTCOMM_TIMEOUT=$timeout_s \
    timeout -k 2 90 "$prog" kill 16 $after >"$mp_tmp/out$r" 2>&1
   exit $?) 2>/dev/null &
  wrap[r]=$!
  mp_pids+=($!)
done
for ((r = 0; r < n; r++)); do
  if ! wait_for "$mp_tmp/out$r" "ready" 60; then
    fail "rank $r never finished its first round: $(cat "$mp_tmp/out$r")"
    mp_finish
  fi
done
pid=$(sed -n 's/.*ready pid \([0-9]*\).*/\1/p' "$mp_tmp/out$victim")
mp_pids+=("$pid")
sleep 0.3
kill_at=$(date +%s.%N)
kill "$sig" "$pid"

declare -a rcs lines lates
for ((r = 0; r < n; r++)); do
  if [ $r -eq $victim ] && [ "$mode" = stop ]; then
    continue # still stopped: mp_cleanup kills it
  fi
  wait "${wrap[$r]}"
  rcs[r]=$?
  lines[r]=$(grep "rank $r: ERR " "$mp_tmp/out$r")
  at=$(printf '%s\n' "${lines[r]}" | sed -n 's/.* at \([0-9.]*\): .*/\1/p')
  lates[r]=$(awk -v a="${at:-0}" -v k="$kill_at" 'BEGIN { printf "%.3f", a - k }')
done
# The rank a failure names: the victim, or (stopped: the ring's ranks time
# out at about the same moment, each naming the one it waited for) a
# survivor whose own failure names the victim.
names_victim() {
  local line=$1 s
  contains "$line" "$want" "rank $victim" && return 0
  [ "$mode" = stop ] || return 1
  s=$(printf '%s\n' "$line" | sed -n 's/.*waiting for rank \([0-9]*\) .*/\1/p')
  [ -n "$s" ] && [ "$s" != "$victim" ] && contains "${lines[s]:-}" "$want" "rank $victim"
}
for ((r = 0; r < n; r++)); do
  [ $r -eq $victim ] && [ "$mode" = stop ] && continue
  rc=${rcs[r]} line=${lines[r]} late=${lates[r]}
  out=$(cat "$mp_tmp/out$r")
  if [ $r -eq $victim ]; then
    if [ $rc -eq 137 ]; then ok "rank $r was killed"; else fail "rank $r: exit $rc, want 137"; fi
    continue
  fi
  if [ $rc -ne 4 ]; then
    fail "rank $r: exit $rc, want 4 (all failed alike, poisoned, freed): $out"
  elif ! names_victim "$line"; then
    fail "rank $r: want $want naming rank $victim: $line"
  elif ! awk -v l="$late" -v s="$slack" 'BEGIN { exit !(l < s) }'; then
    fail "rank $r: failed $late s after the kill: $line"
  else
    ok "rank $r failed $late s after the kill: $line"
  fi
done
mp_finish
