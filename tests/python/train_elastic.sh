#!/bin/bash
# train_elastic.sh LAUNCHER PYTHON TRAIN_PY N VICTIM STEP shm|tcp [ARGS...]
# examples/python/train.py --elastic (issue 37) on N ranks through
# distcomm-launch --keep-going, rank VICTIM killing itself as it starts
# step STEP (--die-at), as tests/examples/train_elastic.sh does for
# examples/train. Passes when the launcher ends with status 0 naming the
# killed rank; every survivor reports the loss naming it and shrinks; rank
# 0 says who went; the survivors' weights are identical; and the run
# learns what the uninterrupted N-rank run learns (same batches, cut among
# the survivors and weighted): the losses logged after the kill within
# 5e-5 relative (measured: the same 6 digits), accuracy within 1 point.
set -u
launcher=$1 py=$2 train=$3 n=$4 victim=$5 at=$6 transport=$7
shift 7
dir=$(mktemp -d /tmp/distcomm-pyelastic.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL - $*"; exit 1; }
[ "$transport" = tcp ] && export DISTCOMM_SHM=0
args=(--steps 100 "$@")
left=$((n - 1))

timeout -k 5 100 "$launcher" -n "$n" -- "$py" "$train" "${args[@]}" >"$dir/base" 2>&1 ||
  { cat "$dir/base"; fail "the run without a kill failed"; }
timeout -k 5 100 "$launcher" -n "$n" --keep-going -- "$py" "$train" "${args[@]}" \
  --elastic --die-at "$at" --die-rank "$victim" >"$dir/out" 2>&1
rc=$?
cat "$dir/out"
[ "$rc" -eq 0 ] || fail "the launcher exited with $rc (124: timed out)"
grep -Eq "^distcomm-launch: rank $victim \(pid [0-9]+ on [^)]*\) was killed by signal 9" "$dir/out" ||
  fail "no launcher line names rank $victim killed"
grep -q "^distcomm-launch: --keep-going: $left of $n ranks finished, 1 lost" "$dir/out" ||
  fail "the launcher does not count $left of $n ranks finished"
saw=$(grep -Ec "^train.py: rank [0-9]+: step $at: .*rank $victim .*; shrinking the group$" "$dir/out")
[ "$saw" -eq "$left" ] || fail "$saw of $left survivors report the loss of rank $victim at step $at"
grep -q "^elastic: lost world rank $victim; $left ranks go on from step $at:" "$dir/out" ||
  fail "rank 0 does not say that rank $victim went and $left go on from step $at"
grep -q "^weights identical on all $left ranks$" "$dir/out" || fail "weights not identical on the $left survivors"
grep '^elastic: step' "$dir/out" || fail "no recovery time line"

# the step lines logged after the kill (every 25 steps)
after() { awk -v at="$at" '/^step/ && $2 >= at' "$1"; }
paste <(after "$dir/base") <(after "$dir/out") |
  awk '{ if ($2 != $6) { print "step numbers differ: " $0; bad = 1; exit }
         d = $4 - $8; if (d < 0) d = -d; r = d / $4; if (r > worst) worst = r
         if (r > 5e-5) { printf "step %d: loss %s without the kill, %s with it\n", $2, $4, $8; bad = 1 }
         lines++ }
       END { if (lines < 2) { print lines " step lines after the kill"; bad = 1 }
             printf "%d losses after the kill compared, worst relative gap %.2g\n", lines, worst
             exit bad }' || fail "the losses differ from the run without a kill"
acc() { sed -n 's/^held-out accuracy \([0-9.]*\)%.*/\1/p' "$1"; }
a=$(acc "$dir/base") b=$(acc "$dir/out")
[ -n "$a" ] && [ -n "$b" ] || fail "no accuracy line"
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1.0) }' ||
  fail "accuracy $b% with the kill, $a% without"
echo "ok - $left of $n ranks finished after rank $victim went at step $at ($transport): accuracy $b% ($a% without the kill)"
