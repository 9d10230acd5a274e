# elastic_lib.sh: what the elastic training tests share (sourced by
# train_elastic.sh, train_elastic_kill.sh and tests/python/train_elastic.sh):
# a run without a kill to compare with, the launcher's end, the loss curve
# and the held-out accuracy. Callers set $launcher, $n and $transport.
# shellcheck shell=bash
left=$((n - 1))
dir=$(mktemp -d /tmp/distcomm-elastic.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL - $*"; exit 1; }
[ "$transport" = tcp ] && export DISTCOMM_SHM=0

# elastic_base CMD...: the same training on N ranks without a kill ($dir/base)
elastic_base() {
  timeout -k 5 100 "$launcher" -n "$n" -- "$@" >"$dir/base" 2>&1 ||
    { cat "$dir/base"; fail "the run without a kill failed"; }
}

# elastic_launcher_end RC PID: the launcher ended with 0, named the rank
# of pid PID (a pattern) killed and counted the survivors; sets $killed
elastic_launcher_end() {
  [ "$1" -eq 0 ] || fail "the launcher exited with $1 (124: timed out)"
  killed=$(sed -n "s/^distcomm-launch: rank \([0-9]*\) (pid $2 on [^)]*) was killed by signal 9.*/\1/p" "$dir/out")
  [ -n "$killed" ] || fail "no launcher line names a rank (pid $2) killed"
  grep -q "^distcomm-launch: --keep-going: $left of $n ranks finished, 1 lost" "$dir/out" ||
    fail "the launcher does not count $left of $n ranks finished"
}

# elastic_losses FROM TO MIN: the step lines of steps FROM..TO (the
# redone step on) in both runs are the same steps, at least MIN of them
# (an exact count when MIN is negative), each loss within 5e-5 relative
elastic_losses() {
  paste <(grep '^step' "$dir/base") <(grep '^step' "$dir/out") |
    awk -v from="$1" -v to="$2" -v min="$3" '
       { if ($2 != $6) { print "step numbers differ: " $0; bad = 1; exit }
         if ($2 < from || $2 > to) next
         d = $4 - $8; if (d < 0) d = -d; r = d / $4; if (r > worst) worst = r
         if (r > 5e-5) { printf "step %d: loss %s without the kill, %s with it\n", $2, $4, $8; bad = 1 }
         lines++ }
       END { if (min < 0 ? lines != -min : lines < min) { print lines " step lines compared"; bad = 1 }
             printf "%d losses compared with the run without a kill, worst relative gap %.2g\n", lines, worst
             exit bad }' || fail "the loss curve differs from the run without a kill"
}

# elastic_accuracy: the held-out accuracy within 1 point of the run
# without a kill; sets $accuracy to "B% (A% without the kill)"
elastic_accuracy() {
  local a b
  a=$(sed -n 's/^held-out accuracy \([0-9.]*\)%.*/\1/p' "$dir/base")
  b=$(sed -n 's/^held-out accuracy \([0-9.]*\)%.*/\1/p' "$dir/out")
  [ -n "$a" ] && [ -n "$b" ] || fail "no accuracy line"
  awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1.0) }' ||
    fail "accuracy $b% with the kill, $a% without"
  accuracy="$b% ($a% without the kill)"
}

# elastic_common VICTIM STEP WEIGHTS: rank 0 says who went and that the
# others go on from STEP; the weight check line; the recovery time line
elastic_common() {
  grep -q "^elastic: lost world rank $1; $left ranks\? go\(es\)\? on from step $2:" "$dir/out" ||
    fail "rank 0 does not say that rank $1 went and $left go on from step $2"
  grep -q "^weights identical on all $left rank" "$dir/out" || fail "no weight check line for $left ranks"
  grep '^elastic: step' "$dir/out" || fail "no recovery time line"
}
