#!/bin/bash
# expect_output.sh LAUNCHER N PATTERN LINES -- COMMAND...
# Runs COMMAND on N ranks through the launcher; passes when the job exits 0
# and at least LINES output lines match the extended regex PATTERN.
# (ctest's PASS_REGULAR_EXPRESSION would ignore the exit status.)
set -u
launch=$1 n=$2 pattern=$3 lines=$4
shift 5
out=$(timeout 120 "$launch" -n "$n" -- "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
got=$(printf '%s\n' "$out" | grep -cE -- "$pattern")
if [ "$rc" -ne 0 ]; then echo "FAIL: the job exited with status $rc"; exit 1; fi
if [ "$got" -lt "$lines" ]; then
  echo "FAIL: $got lines match '$pattern', expected $lines"; exit 1
fi
echo "PASS: $got lines match"
