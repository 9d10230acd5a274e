#!/bin/bash
# side_by_side.sh LAUNCH CONFORMANCE: two jobs on one host at the same time
# (each 2 ranks, shared memory inside each job) must not disturb each other:
# both pass the quick conformance set.
set -u
launch=$1
conf=$2
. "$(dirname "$0")/mp_lib.sh"
for j in 1 2; do
  timeout -k 5 300 "$launch" -n 2 -- "$conf" --size 2 --quick >"$mp_tmp/job$j" 2>&1 &
  mp_pids+=($!)
done
for j in 1 2; do
  wait "${mp_pids[$((j - 1))]}"
  rc=$?
  passed=$(grep -c "0 failed" "$mp_tmp/job$j")
  if [ $rc -eq 0 ] && [ "$passed" -eq 2 ]; then
    ok "job $j: both ranks passed"
  else
    fail "job $j: exit $rc: $(tail -5 "$mp_tmp/job$j")"
  fi
done
mp_finish
