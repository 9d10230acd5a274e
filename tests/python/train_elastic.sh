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
. "$(dirname "$0")/../examples/elastic_lib.sh"
args=(--steps 100 "$@")

elastic_base "$py" "$train" "${args[@]}"
timeout -k 5 100 "$launcher" -n "$n" --keep-going -- "$py" "$train" "${args[@]}" \
  --elastic --die-at "$at" --die-rank "$victim" >"$dir/out" 2>&1
rc=$?
cat "$dir/out"
elastic_launcher_end "$rc" '[0-9]*'
[ "$killed" = "$victim" ] || fail "the launcher names rank $killed killed, not $victim"
saw=$(grep -Ec "^train.py: rank [0-9]+: step $at: .*rank $victim .*; shrinking the group$" "$dir/out")
[ "$saw" -eq "$left" ] || fail "$saw of $left survivors report the loss of rank $victim at step $at"
elastic_common "$victim" "$at"
# the step lines logged after the kill (every 25 steps)
elastic_losses "$at" 1000000 2
elastic_accuracy
echo "ok - $left of $n ranks finished after rank $victim went at step $at ($transport): accuracy $accuracy"
