#!/bin/bash
# kill_matrix.sh LAUNCHER FAULT_PROBE KILL|STOP [MIB]: through the real
# launcher, {2, 4 ranks} x {shared memory, TCP} x {all_sum of MIB MiB
# (default 64), send/recv of 8 MiB, barrier}
# (STOP: all_sum and send/recv), one rank (never always rank 0; a middle
# one of 4) gets the signal while the job is inside the op.
#   KILL: every survivor returns ERR_PEER_LOST naming the victim within 2 s
#         of the kill; the launcher exits non-zero with a line naming the
#         rank and signal 9.
#   STOP: with a 3 s timeout (once all ranks are past the first op),
#         every survivor returns ERR_TIMEOUT within 10 s of the stop,
#         naming the peer it was waiting for; at least one names the
#         stopped rank; a rank whose own timeout fired had waited 2.5 s or
#         more in that op (the clock runs from the last progress, which may
#         come before the stop: no lower bound from the stop). (A timeout
#         cannot tell a stuck peer from one waiting on a stuck peer: in the
#         send/recv chain 0->1->2->3, stopping 1 mid-send can make 3 time
#         out first, waiting for 2, before 2 does, waiting for 1.)
# MATRIX_RANKS (default "2 4"), MATRIX_OPS (default all three, STOP: not
# barrier) and MATRIX_FLOATS (all_sum of that many floats instead of MIB)
# narrow the matrix: the recursive doubling cases (5 ranks, a victim that
# hands its operand over or one in the middle) run that way.
# Both: each survivor's later calls return the same error at once and
# dc_group_free returns (fault_probe's sticky lines); no process of the job
# outlives the launcher (found by a unique --tag in argv); nothing of the job
# is left in /dev/shm.
set -u
launcher=$1 probe=$2 sig=$3 sum_mib=${4:-64}
. "$(dirname "$0")/../mp/mp_lib.sh"

# wait_count FILE PATTERN N SECONDS PID: until PATTERN occurs on N lines
# (fails at once when PID, the launcher, has exited).
wait_count() {
  local deadline=$(($(now_ms) + $4 * 1000))
  while [ "$(now_ms)" -lt "$deadline" ] && kill -0 "$5" 2>/dev/null; do
    [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
    sleep 0.02
  done
  return 1
}

# no_leftovers NAME TAG JOB: no process with TAG in argv, no shm segment.
no_leftovers() {
  local name=$1 tag=$2 job=$3 left i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    left=$(pgrep -f -- "$tag" | tr '\n' ' ')
    [ -z "$left" ] && break
    sleep 0.1
  done
  if [ -n "$left" ]; then
    fail "$name: processes outlived the launcher: $left"
    for i in $left; do kill -CONT "$i"; kill -9 "$i"; done 2>/dev/null
  fi
  left=$(ls /dev/shm 2>/dev/null | grep "distcomm-0*$job" || true)
  [ -n "$left" ] && fail "$name: left in /dev/shm: $left"
}

# check_survivor NAME OUT RANK VICTIM SINCE: its error line, timing, sticky.
check_survivor() {
  local name=$1 out=$2 r=$3 v=$4 since=$5 line at late want lo hi
  line=$(grep "^rank $r: ERR " "$out")
  at=$(printf '%s\n' "$line" | sed -n 's/.* at \([0-9.]*\) after .*/\1/p')
  late=$(awk -v a="${at:-0}" -v k="$since" 'BEGIN { printf "%.3f", a - k }')
  local who="rank $v"
  if [ "$sig" = KILL ]; then want=ERR_PEER_LOST lo=0 hi=2.0
  else want=ERR_TIMEOUT lo=0 hi=10 who="waiting for rank"; fi
  local waited
  waited=$(printf '%s\n' "$line" | sed -n 's/.* after \([0-9]*\) ms: [a-z_]*: no progress .*/\1/p')
  if ! contains "$line" "$want" "$who"; then
    fail "$name: rank $r: want $want naming $who: ${line:-no error line}"
  elif ! awk -v l="$late" -v lo=$lo -v hi=$hi 'BEGIN { exit !(l >= lo && l < hi) }'; then
    fail "$name: rank $r failed $late s after the signal (want $lo..$hi s): $line"
  elif [ -n "$waited" ] && [ "$waited" -lt 2500 ]; then
    fail "$name: rank $r timed out after waiting only $waited ms: $line"
  elif ! grep -q "^rank $r: sticky: " "$out" || ! grep -q "^rank $r: freed in" "$out"; then
    fail "$name: rank $r: $(grep "^rank $r: \(STICKY\|freed\)" "$out")"
  else
    ok "$name: rank $r after $late s: ${line#*: }"
  fi
}

# run_case N MODE OP VICTIM MIB
run_case() {
  local n=$1 mode=$2 op=$3 v=$4 mib=$5
  local name="$sig $n ranks $mode $op (victim $v)" tag="dcfault-$$-$RANDOM$RANDOM"
  local out="$mp_tmp/out.$tag" shm=1 tmo=30 lp pid job since rc r
  [ "$mode" = tcp ] && shm=0
  [ "$sig" = STOP ] && tmo=3
  # the timeout once every rank is past the first op (under TSan on a busy
  # host a 4-rank sendrecv's first op took over 3 s, and a neighbour already
  # on the second timed out before anything was stopped)
  local size=(--mib "$mib")
  [ "$op" = all_sum ] && [ -n "${MATRIX_FLOATS:-}" ] && size=(--floats "$MATRIX_FLOATS")
  DISTCOMM_SHM=$shm timeout -k 5 60 "$launcher" -n "$n" -- \
    "$probe" "$op" "${size[@]}" --linger 0.5 --timeout "$tmo" --tag "$tag" >"$out" 2>&1 &
  lp=$!
  mp_pids+=("$lp")
  if ! wait_count "$out" " ready pid " "$n" 60 "$lp"; then
    fail "$name: not every rank finished its first $op: $(cat "$out")"
    kill "$lp" 2>/dev/null; wait "$lp"; no_leftovers "$name" "$tag" none
    return
  fi
  pid=$(sed -n "s/^rank $v ready pid \([0-9]*\) .*/\1/p" "$out")
  job=$(sed -n "s/^rank $v ready pid [0-9]* job \([0-9a-f]*\).*/\1/p" "$out")
  sleep 0.2 # the loop is inside an op by now
  since=$(date +%s.%N)
  kill "-$sig" "$pid"
  wait "$lp"
  rc=$?
  for ((r = 0; r < n; r++)); do
    [ $r -ne "$v" ] && check_survivor "$name" "$out" $r "$v" "$since"
  done
  if ! grep -q "^rank [0-9]*: ERR .*rank $v " "$out"; then
    fail "$name: no survivor names rank $v"
  fi
  # sanitizer builds: a leak or bad access in any rank (LeakSanitizer runs
  # when a survivor exits after freeing its group)
  if grep -q "Sanitizer" "$out"; then
    fail "$name: $(grep -m3 "Sanitizer" "$out")"
  fi
  # 137 is the launcher's own answer to a rank killed by signal 9 (128+9)
  if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
    fail "$name: launcher exit $rc, want a failure of its own: $(tail -3 "$out")"
  elif [ "$sig" = KILL ] && ! grep -q "distcomm-launch: rank $v (pid $pid.*signal 9" "$out"; then
    fail "$name: no launcher line names rank $v and signal 9: $(grep distcomm-launch "$out")"
  else
    ok "$name: launcher exit $rc: $(grep -m1 'distcomm-launch: rank' "$out")"
  fi
  no_leftovers "$name" "$tag" "${job:-none}"
}

# A STOP case mostly waits (the timeout, then the launcher's grace before
# it SIGKILLs the stopped rank): two run side by side, each in a subshell
# whose ok/FAIL lines are counted here.
t0=$(now_ms)
ops="all_sum sendrecv barrier" width=1
[ "$sig" = STOP ] && ops="all_sum sendrecv" width=2
ops=${MATRIX_OPS:-$ops}
i=0
running=()
for n in ${MATRIX_RANKS:-2 4}; do
  for mode in shm tcp; do
    for op in $ops; do
      # 2 ranks: victim 1 or 0 in turn; 4 ranks: a middle one, 2 or 1;
      # others: the last or 2.
      if [ $n -eq 2 ]; then v=$(((i + 1) % 2));
      elif [ $n -eq 4 ]; then v=$((2 - i % 2));
      else v=$((i % 2 ? 2 : n - 1)); fi
      mib=$sum_mib
      [ "$op" = sendrecv ] && mib=8
      (fails=0; trap - EXIT; run_case $n $mode $op $v $mib) >"$mp_tmp/case.$i" 2>&1 &
      running+=($!)
      i=$((i + 1))
      if [ ${#running[@]} -ge $width ]; then wait "${running[@]}"; running=(); fi
    done
  done
done
wait "${running[@]}"
for ((c = 0; c < i; c++)); do
  cat "$mp_tmp/case.$c"
  fails=$((fails + $(grep -c "^FAIL - " "$mp_tmp/case.$c")))
done
echo "$sig matrix: $i cases in $(($(now_ms) - t0)) ms"
mp_finish
