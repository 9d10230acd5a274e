#!/bin/bash
# train_elastic_kill.sh LAUNCHER TRAIN N shm|tcp [ARGS]: examples/train --elastic
# on N ranks; a rank (the newest pid) is killed from outside with SIGKILL
# once rank 0 has logged step 60 of 3000: at whatever point of a step it
# is, most likely inside an all_sum (in the runs seen, every survivor
# then failed in the same step, so rank 0's state broadcast changed
# nothing: a rank one step ahead is handled, not shown). Passes when the launcher ends with status 0 and names the
# killed rank, rank 0 names it lost, the survivors' weights are identical,
# the losses logged up to 40 steps after the resume point are within 5e-5
# relative of the run without a kill (the survivors resume from the new
# rank 0's state, whichever step each had reached; later, rounding grows
# with training), and the held-out accuracy is within 1 point.
set -u
launcher=$1 train=$2 n=$3 transport=$4
shift 4
. "$(dirname "$0")/elastic_lib.sh"
args=(--seed 5 --steps 3000 --log-every 1 "$@")

elastic_base "$train" "${args[@]}"
"$launcher" -n "$n" --keep-going -- "$train" "${args[@]}" --elastic >"$dir/out" 2>&1 &
job=$!
for _ in $(seq 2000); do
  grep -q '^step   60 ' "$dir/out" && break
  sleep 0.05
done
# the launcher's children are the ranks; which one goes does not matter
# (the launcher's line names it). They are stopped first: 3000 steps take
# about 1.5 s, and a test starved of CPU on a loaded machine could
# otherwise look for them after the job had ended.
ranks=$(pgrep -P "$job" | sort -n)
kill -STOP $ranks 2>/dev/null
victim_pid=$(printf '%s\n' "$ranks" | tail -1)
if [ "$(printf '%s\n' "$ranks" | grep -c .)" -ne "$n" ] || grep -q '^weights identical' "$dir/out"; then
  kill -CONT $ranks 2>/dev/null
  kill "$job"
  fail "found rank pids '$ranks', not $n (or the run had ended)"
fi
kill -9 "$victim_pid"
kill -CONT $ranks 2>/dev/null
for _ in $(seq 2000); do # 100 s at most
  kill -0 "$job" 2>/dev/null || break
  sleep 0.05
done
kill -0 "$job" 2>/dev/null && { kill "$job"; fail "still running 100 s after the kill"; }
wait "$job"
rc=$?
grep -v '^step' "$dir/out"
elastic_launcher_end "$rc" "$victim_pid"
victim=$killed
resume=$(sed -n "s/^elastic: lost world rank $victim; $left ranks go on from step \([0-9]*\):.*/\1/p" "$dir/out")
[ -n "$resume" ] || fail "rank 0 does not say that rank $victim went"
elastic_common "$victim" "$resume"
elastic_losses 0 $((resume + 40)) 1
elastic_accuracy
echo "ok - rank $victim killed after step 60, resumed at step $resume ($transport): $left of $n ranks finished, accuracy $accuracy"
