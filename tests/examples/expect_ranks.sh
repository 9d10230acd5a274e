#!/bin/bash
# expect_ranks.sh LAUNCHER N SECONDS PATTERN PROG ARGS...
# Runs PROG on N ranks through the real launcher, killed after SECONDS.
# Passes when the launcher exits 0 and exactly N output lines match PATTERN
# (an extended regex), i.e. every rank ran to the end and said so.
set -u
launcher=$1 n=$2 secs=$3 pattern=$4
shift 4
out=$(mktemp /tmp/distcomm-ex.XXXXXX)
trap 'rm -f "$out"' EXIT
timeout -k 5 "$secs" "$launcher" -n "$n" -- "$@" >"$out" 2>&1
rc=$?
cat "$out"
good=$(grep -Ec "$pattern" "$out")
if [ "$rc" -ne 0 ]; then
  echo "FAIL - launcher exited with $rc (124 = killed after ${secs} s)"
  exit 1
fi
if [ "$good" -ne "$n" ]; then
  echo "FAIL - $good of $n ranks printed a line matching '$pattern'"
  exit 1
fi
echo "ok - $n ranks"
