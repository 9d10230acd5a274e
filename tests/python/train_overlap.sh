#!/bin/bash
# train_overlap.sh LAUNCHER PYTHON TRAIN_PY
# examples/python/train.py --overlap on 2 ranks (buckets started from
# backward, one wait per step), as tests/examples/train_overlap.sh does for
# examples/train: both runs must end with weights identical on both ranks
# and, as on 2 ranks every element is a + b whichever bucket it travels in,
# with the same weights digest as the blocking run; the overlapped run must
# say it overlapped and report the communication share.
set -u
launcher=$1 py=$2 train=$3
out=$(mktemp /tmp/distcomm-pytraino.XXXXXX)
trap 'rm -f "$out"' EXIT
args=(--steps 30 --hidden 96 --layers 4 --batch 32)
sums=()
for mode in blocking overlap; do
  extra=()
  [ "$mode" = overlap ] && extra=(--overlap --bucket-bytes 20000)
  timeout -k 5 120 "$launcher" -n 2 -- "$py" "$train" "${args[@]}" "${extra[@]}" >"$out" 2>&1 ||
    { cat "$out"; echo "FAIL - $mode run"; exit 1; }
  cat "$out"
  grep -q "^weights identical on all 2 ranks$" "$out" ||
    { echo "FAIL - $mode: weights not identical on both ranks"; exit 1; }
  c=$(sed -n 's/^weights sha256 \([0-9a-f]*\)$/\1/p' "$out")
  [ -n "$c" ] || { echo "FAIL - $mode: no digest line"; exit 1; }
  sums+=("$c")
  grep -q "communication [0-9]*% of step time" "$out" ||
    { echo "FAIL - $mode: no communication share"; exit 1; }
done
grep -q "overlapped with backward" "$out" || { echo "FAIL - not overlapped"; exit 1; }
[ "${sums[0]}" = "${sums[1]}" ] ||
  { echo "FAIL - digests differ: blocking ${sums[0]}, overlap ${sums[1]}"; exit 1; }
echo "ok - --overlap ends with the blocking run's weights (${sums[1]})"
