#!/bin/bash
# train_elastic.sh LAUNCHER TRAIN N VICTIM STEP shm|tcp [TRAIN ARGS...]
# examples/train --elastic (issue 37) on N ranks through
# distcomm-launch --keep-going: rank VICTIM kills itself (--die-at STEP);
# the survivors shrink, take the new rank 0's state and finish. Passes when
#   - the launcher ends with status 0, names the killed rank, and counts
#     N - 1 ranks finished;
#   - every survivor saw the loss (its error names the victim) and rank 0
#     says who went and that N - 1 ranks go on from step STEP;
#   - the survivors' weights are bit-identical (train checks it);
#   - the run learns what the uninterrupted run learns: each batch is the
#     same and cut among the survivors, so every logged loss is within 5e-5
#     relative of an N-rank run without a kill (measured: the same 6
#     digits; leaving the shares unweighted makes 2e-4 at the redone step,
#     a wrong resume point far more), and the held-out accuracy within
#     1 point.
# Prints the recovery line (failed step began -> redone step done).
set -u
launcher=$1 train=$2 n=$3 victim=$4 at=$5 transport=$6
shift 6
dir=$(mktemp -d /tmp/distcomm-elastic.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL - $*"; exit 1; }
[ "$transport" = tcp ] && export DISTCOMM_SHM=0
args=(--seed 3 --steps 100 --log-every 5 "$@")
left=$((n - 1))

timeout -k 5 100 "$launcher" -n "$n" -- "$train" "${args[@]}" >"$dir/base" 2>&1 ||
  { cat "$dir/base"; fail "the run without a kill failed"; }
timeout -k 5 100 "$launcher" -n "$n" --keep-going -- "$train" "${args[@]}" \
  --elastic --die-at "$at" --die-rank "$victim" >"$dir/out" 2>&1
rc=$?
cat "$dir/out"
[ "$rc" -eq 0 ] || fail "the launcher exited with $rc (124: timed out after 100 s)"
grep -Eq "^distcomm-launch: rank $victim \(pid [0-9]+ on [^)]*\) was killed by signal 9" "$dir/out" ||
  fail "no launcher line names rank $victim killed"
grep -q "^distcomm-launch: --keep-going: $left of $n ranks finished, 1 lost" "$dir/out" ||
  fail "the launcher does not count $left of $n ranks finished"
saw=$(grep -Ec "^train: rank [0-9]+: dc_average_gradients(_wait|_ready)? failed after $((at - 1)) steps: .*rank $victim .*; shrinking the group$" "$dir/out")
[ "$saw" -eq "$left" ] || fail "$saw of $left survivors report the loss of rank $victim"
grep -q "^elastic: lost world rank $victim; $left ranks\? go\(es\)\? on from step $at:" "$dir/out" ||
  fail "rank 0 does not say that rank $victim went and $left go on from step $at"
grep -q "^weights identical on all $left rank" "$dir/out" || fail "no weight check line for $left ranks"
grep '^elastic: step' "$dir/out" || fail "no recovery time line"

paste <(grep '^step' "$dir/base") <(grep '^step' "$dir/out") |
  awk '{ if ($2 != $6) { print "step numbers differ: " $0; bad = 1; exit }
         d = $4 - $8; if (d < 0) d = -d; r = d / $4; if (r > worst) worst = r
         if (r > 5e-5) { printf "step %d: loss %s without the kill, %s with it\n", $2, $4, $8; bad = 1 }
         lines++ }
       END { if (lines != 21) { print lines " step lines, not 21"; bad = 1 }
             printf "%d losses compared with the run without a kill, worst relative gap %.2g\n", lines, worst
             exit bad }' || fail "the loss curve differs from the run without a kill"
acc() { sed -n 's/^held-out accuracy \([0-9.]*\)%.*/\1/p' "$1"; }
a=$(acc "$dir/base") b=$(acc "$dir/out")
[ -n "$a" ] && [ -n "$b" ] || fail "no accuracy line"
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1.0) }' ||
  fail "accuracy $b% with the kill, $a% without"
echo "ok - $left of $n ranks finished after rank $victim went at step $at ($transport): accuracy $b% ($a% without the kill)"
