#!/bin/bash
# train_elastic_refused.sh LAUNCHER PYTHON TRAIN_PY: the error paths of
# examples/python/train.py --elastic. On the mesh backend (refused until
# issue 37's mesh part, now a mesh of the survivors), rank 1 of 3 killed
# at step 20: the survivors go on and end with the same weights;
# --die-rank beyond the ranks: one line from rank 0, status 2.
set -u
launcher=$1 py=$2 train=$3
out=$(mktemp /tmp/distcomm-pyrefused.XXXXXX)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL - $*"; exit 1; }

timeout -k 5 100 "$launcher" -n 3 --keep-going --backend jaccl -- "$py" "$train" \
  --batch 255 --steps 50 --elastic --die-at 20 >"$out" 2>&1
rc=$?
cat "$out"
[ "$rc" -eq 0 ] || fail "mesh: exit status $rc, not 0"
grep -q "^elastic: lost world rank 1; 2 ranks go on from step 20" "$out" ||
  fail "mesh: no line says 2 ranks go on"
grep -q "weights identical on all 2 ranks" "$out" ||
  fail "mesh: the survivors' weights differ"
grep -q Traceback "$out" && fail "mesh: a traceback"

timeout -k 5 100 "$launcher" -n 2 -- "$py" "$train" --die-at 3 --die-rank 2 >"$out" 2>&1
rc=$?
cat "$out"
[ "$rc" -eq 2 ] || fail "--die-rank 2: exit status $rc, not 2"
n=$(grep -c "^train.py: --die-rank 2 is not one of the 2 ranks$" "$out")
[ "$n" -eq 1 ] || fail "--die-rank 2: $n error lines, not 1"
echo "ok - --elastic on the mesh goes on, and a bad --die-rank: a clear error"
