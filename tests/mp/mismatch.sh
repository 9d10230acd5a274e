#!/bin/bash
# mismatch.sh LAUNCHER PROBE: the last of 4 ranks disagrees with the others
# (count, dtype, op, root, or a different collective), at a small and a large
# count. Every rank must return an error (none hangs, none "succeeds"; for
# two ranks that both think they are the broadcast root, the error may come
# from the barrier after it, as neither receives anything), at
# least one must say ERR_MISMATCH, and all within 5 s although the timeout is
# 60 s (so the failure is propagated, not waited out).
set -u
launcher=$1 probe=$2
. "$(dirname "$0")/mp_lib.sh"
n=4

for kind in count dtype op root coll; do
  for count in 1 1000003; do
    name="$kind mismatch, count $count"
    DISTCOMM_TIMEOUT=60 timeout -k 5 40 "$launcher" -n $n -- \
      "$probe" mismatch $kind $count >"$mp_tmp/out" 2>&1
    rc=$?
    out=$(cat "$mp_tmp/out")
    errs=$(grep -c "mismatch-$kind: ERR_" "$mp_tmp/out")
    slow=$(sed -n 's/.*: ERR_[A-Z_]* after \([0-9.]*\) s.*/\1/p' "$mp_tmp/out" |
           awk '$1 >= 5 { n++ } END { print n + 0 }')
    if [ $rc -ne 0 ]; then
      fail "$name: launcher exit $rc: $out"
    elif [ "$errs" -ne $n ]; then
      fail "$name: $errs of $n ranks returned an error: $out"
    elif ! grep -q "mismatch-$kind: ERR_MISMATCH" "$mp_tmp/out"; then
      fail "$name: no rank said ERR_MISMATCH: $out"
    elif [ "$slow" -ne 0 ]; then
      fail "$name: $slow rank(s) took 5 s or more: $out"
    else
      ok "$name: $(grep -m1 ERR_MISMATCH "$mp_tmp/out")"
    fi
  done
done
mp_finish
