#!/bin/bash
# train_kill.sh LAUNCHER TRAIN: examples/train without --elastic, rank 1
# of 3 killed at step 20 (--die-at): the job still ends, with the error
# naming the rank, and nothing hangs.
#   - plain launch: the launcher names rank 1 killed, stops the others and
#     exits non-zero;
#   - --keep-going: each survivor's op fails naming rank 1, it exits 1,
#     and so does the job.
# And --elastic on the mesh backend, which shrinks to a mesh since
# issue 37's mesh part (it was refused before): the survivors go on and
# finish with the same weights.
set -u
launcher=$1 train=$2
out=$(mktemp /tmp/distcomm-trainkill.XXXXXX)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL - $*"; exit 1; }
args=(--steps 100 --batch 255 --die-at 20)

# the launcher's status is the killed rank's, 137, as is timeout's after
# its KILL: the time tells them apart
SECONDS=0
timeout -k 5 60 "$launcher" -n 3 -- "$train" "${args[@]}" >"$out" 2>&1
rc=$?
cat "$out"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$SECONDS" -lt 55 ] ||
  fail "plain launch: exit status $rc after $SECONDS s"
grep -Eq "^distcomm-launch: rank 1 \(pid [0-9]+ on [^)]*\) was killed by signal 9 .*; stopping the other ranks" "$out" ||
  fail "plain launch: no line names rank 1 killed"
grep -q '^weights identical' "$out" && fail "plain launch: training finished"

timeout -k 5 60 "$launcher" -n 3 --keep-going -- "$train" "${args[@]}" >"$out" 2>&1
rc=$?
cat "$out"
[ "$rc" -eq 1 ] || fail "--keep-going: exit status $rc, not 1"
n=$(grep -Ec "^train: rank [02]: dc_average_gradients failed: .*rank 1 " "$out")
[ "$n" -eq 2 ] || fail "--keep-going: $n of 2 survivors name rank 1 in their error"
grep -q "shrinking" "$out" && fail "--keep-going: shrank without --elastic"

timeout -k 5 60 "$launcher" -n 3 --keep-going --backend jaccl -- "$train" "${args[@]}" --elastic \
  >"$out" 2>&1
rc=$?
cat "$out"
[ "$rc" -eq 0 ] || fail "--elastic on the mesh: exit status $rc, not 0"
grep -q "^elastic: lost world rank 1; 2 ranks go on from step 20" "$out" ||
  fail "--elastic on the mesh: no line says 2 ranks go on"
grep -q "^weights identical on all 2 ranks" "$out" ||
  fail "--elastic on the mesh: the survivors' weights differ"
echo "ok - without --elastic a lost rank ends the job, named; on the mesh --elastic goes on"
