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
. "$(dirname "$0")/elastic_lib.sh"
args=(--seed 3 --steps 100 --log-every 5 "$@")

elastic_base "$train" "${args[@]}"
timeout -k 5 100 "$launcher" -n "$n" --keep-going -- "$train" "${args[@]}" \
  --elastic --die-at "$at" --die-rank "$victim" >"$dir/out" 2>&1
rc=$?
cat "$dir/out"
elastic_launcher_end "$rc" '[0-9]*'
[ "$killed" = "$victim" ] || fail "the launcher names rank $killed killed, not $victim"
saw=$(grep -Ec "^train: rank [0-9]+: dc_average_gradients(_wait|_ready)? failed after $((at - 1)) steps: .*rank $victim .*; shrinking the group$" "$dir/out")
[ "$saw" -eq "$left" ] || fail "$saw of $left survivors report the loss of rank $victim"
elastic_common "$victim" "$at"
elastic_losses 0 1000000 -21
elastic_accuracy
echo "ok - $left of $n ranks finished after rank $victim went at step $at ($transport): accuracy $accuracy"
