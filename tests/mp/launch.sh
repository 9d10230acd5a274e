#!/bin/bash
# launch.sh [--expect PATTERN] LAUNCHER N SECONDS PROG ARGS...
# Runs PROG on N ranks through the real launcher, killed after SECONDS.
# Passes only when the launcher exits 0 AND exactly N output lines match
# PATTERN, an extended regex (so a rank that never ran, or never reported,
# fails). The default is the last line of the tests/mp programs; the
# tests/examples programs name theirs with --expect.
set -u
pattern='passed, 0 failed$'
if [ "$1" = --expect ]; then pattern=$2; shift 2; fi
launcher=$1 n=$2 secs=$3
shift 3
out=$(mktemp /tmp/distcomm-mp-launch.XXXXXX)
trap 'rm -f "$out"' EXIT
timeout -k 5 "$secs" "$launcher" -n "$n" -- "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
good=$(grep -Ec "$pattern" "$out")
if [ "$rc" -ne 0 ]; then
  echo "FAIL - launcher exited with $rc (124 = killed after ${secs} s)"
  exit 1
fi
if [ "$good" -ne "$n" ]; then
  echo "FAIL - $good of $n ranks printed a line matching '$pattern'"
  exit 1
fi
echo "ok - $n ranks passed"
