#!/bin/bash
# launch.sh LAUNCHER N SECONDS PROG ARGS...
# Runs PROG on N ranks through the real launcher, killed after SECONDS.
# Passes only when the launcher exits 0 AND exactly N lines end in
# "passed, 0 failed" (so a rank that never ran, or never reported, fails).
set -u
launcher=$1 n=$2 secs=$3
shift 3
out=$(mktemp /tmp/distcomm-mp-launch.XXXXXX)
trap 'rm -f "$out"' EXIT
timeout -k 5 "$secs" "$launcher" -n "$n" -- "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
good=$(grep -c 'passed, 0 failed$' "$out")
if [ "$rc" -ne 0 ]; then
  echo "FAIL - launcher exited with $rc (124 = killed after ${secs} s)"
  exit 1
fi
if [ "$good" -ne "$n" ]; then
  echo "FAIL - $good of $n ranks reported 'passed, 0 failed'"
  exit 1
fi
echo "ok - $n ranks passed"
