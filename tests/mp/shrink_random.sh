#!/bin/bash
# shrink_random.sh LAUNCHER PROG TRIALS MAXN [SEED]: dc_group_shrink under a
# seeded random schedule (issue 37): each trial picks 3 to MAXN ranks (the
# first trial 8 when MAXN is 8), shared memory or TCP, a victim, and how it
# goes: killed between ops or during one (at a random op or time), stopped,
# killed as the others shrink a healthy group, or killed between ops while
# a second rank dies during the shrink itself (a random time after it
# enters it, or at the confirmation). Each trial runs tests/mp/shrink.sh:
# every survivor ends in the same group with the right sums, nothing
# hangs. The seed (MP_SHRINK_SEED, else the time) is printed with each
# trial's command, so that a failure can be replayed.
set -u
launcher=$1 prog=$2 trials=$3 maxn=$4
seed=${5:-${MP_SHRINK_SEED:-$(($(date +%s) % 100000))}}
here=$(dirname "$0")
. "$here/mp_lib.sh"
RANDOM=$seed
echo "seed $seed (replay: MP_SHRINK_SEED=$seed, or one trial's line below)"
# MP_SHRINK_MODES: the modes to draw from (the quick run leaves out stop,
# whose 2 s timeouts are too tight under TSan)
read -r -a modes <<<"${MP_SHRINK_MODES:-between between during during before inshrink inshrink confirm stop}"
export MP_SHRINK_NO_BOUND=1 # the recovery time bound is mp.shrink_3_stop's
for t in $(seq "$trials"); do
  small=$((maxn < 6 ? maxn : 6))
  n=$((3 + RANDOM % (small - 2)))
  [ "$t" -eq 1 ] && [ "$maxn" -ge 8 ] && n=8
  victim=$((RANDOM % n))
  mode=${modes[RANDOM % ${#modes[@]}]}
  [ "$n" -ge 8 ] && mode=during # the 8 ranks once, quick
  transport=$([ $((RANDOM % 2)) -eq 0 ] && echo shm || echo tcp)
  during=$((50000 + (RANDOM * 32768 + RANDOM) % 350000)) # 50 to 400 ms
  delay=$(((RANDOM * 32768 + RANDOM) % 60000))            # 0 to 60 ms
  vars="MP_SHRINK_AT=$((1 + RANDOM % 5)) MP_SHRINK_DURING_US=$during MP_SHRINK_DELAY_US=$delay"
  cmd="env $vars bash $here/shrink.sh $launcher $prog $n $victim $mode $transport"
  t0=$(now_ms)
  $cmd >"$mp_tmp/trial" 2>&1
  rc=$?
  took=$(($(now_ms) - t0))
  if [ "$rc" -eq 0 ]; then
    ok "trial $t ($took ms): $n ranks, $transport, rank $victim $mode ($vars)"
  else
    cat "$mp_tmp/trial"
    fail "trial $t ($took ms), replay: $cmd"
  fi
done
mp_finish
