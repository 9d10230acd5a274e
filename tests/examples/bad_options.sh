#!/bin/bash
# bad_options.sh LAUNCHER TRAIN TENSOR_PARALLEL
# Bad options give one line of error (from rank 0 only, even on several
# ranks) and a non-zero exit; --help exits 0.
set -u
launcher=$1 train=$2 tp=$3
out=$(mktemp /tmp/distcomm-badopt.XXXXXX)
trap 'rm -f "$out"' EXIT
bad=0

# expect N PREFIX WORD PROG ARGS: N ranks (0 = run directly), must fail and
# print exactly one line starting with PREFIX that contains WORD.
expect() {
  local n=$1 prefix=$2 word=$3
  shift 3
  if [ "$n" -eq 0 ]; then
    timeout -k 5 30 "$@" >"$out" 2>&1
  else
    timeout -k 5 60 "$launcher" -n "$n" -- "$@" >"$out" 2>&1
  fi
  local rc=$?
  local lines
  lines=$(grep -c "^$prefix" "$out")
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ] || [ "$lines" -ne 1 ] ||
     ! grep "^$prefix" "$out" | grep -q -- "$word"; then
    echo "FAIL - ($n ranks) $*: rc $rc, $lines error lines:"
    sed 's/^/    /' "$out"
    bad=1
  else
    echo "ok - ($n ranks) $*: $(grep "^$prefix" "$out")"
  fi
}

expect 0 "train: " "--steps" "$train" --steps -5
expect 0 "train: " "--steps" "$train" --steps 0
expect 0 "train: " "--batch" "$train" --batch abc
expect 0 "train: " "--lr" "$train" --lr -0.1
expect 0 "train: " "--optimizer" "$train" --optimizer rmsprop
expect 0 "train: " "--frobnicate" "$train" --frobnicate
expect 0 "train: " "--seed" "$train" --seed
expect 0 "train: " "extra" "$train" extra
expect 0 "train: " "larger than the data set" "$train" --batch 512 --points 100
expect 2 "train: " "does not split evenly over 2 ranks" "$train" --batch 255
expect 4 "train: " "does not split evenly over 4 ranks" "$train" --batch 6
expect 4 "train: " "--hidden" "$train" --hidden -3
expect 0 "train: " "--die-at" "$train" --die-at 0
expect 2 "train: " "--die-rank 2 is not one of the 2 ranks" "$train" --die-at 5 --die-rank 2
expect 0 "tensor_parallel: " "--batch" "$tp" --batch 0
expect 0 "tensor_parallel: " "--hidden" "$tp" --hidden -1
expect 0 "tensor_parallel: " "--nope" "$tp" --nope
expect 4 "tensor_parallel: " "smaller than the 4 ranks" "$tp" --hidden 3

for prog in "$train" "$tp"; do
  if timeout 30 "$prog" --help | grep -q '^usage:'; then
    echo "ok - $(basename "$prog") --help"
  else
    echo "FAIL - $(basename "$prog") --help"
    bad=1
  fi
done
exit $bad
