#!/bin/bash
# run.sh BUILD_DIR SECONDS: run each libFuzzer target of a -DDC_FUZZ=ON build
# for SECONDS on a copy of its seed corpus (tests/fuzz/corpus/<target>; the
# repository's copy is never written). Fails on any crash, leak, sanitizer
# report or timeout, and prints the input that caused it.
set -u
build=$1 secs=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/distcomm-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
status=0
for t in hostfile hello frame agent_wire coordinator; do
  bin=$build/tests/fuzz/fuzz_$t
  if [ ! -x "$bin" ]; then
    echo "FAIL - $bin is missing (configure with -DCMAKE_C_COMPILER=clang -DDC_FUZZ=ON)"
    status=1
    continue
  fi
  mkdir -p "$work/$t/corpus" "$work/$t/crash"
  cp "$here/corpus/$t/"* "$work/$t/corpus/"
  # -timeout: one input may take 10 s at most; the outer timeout is a guard.
  timeout -k 10 $((secs + 120)) "$bin" -max_total_time="$secs" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$work/$t/crash/" "$work/$t/corpus" >"$work/$t/log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t/log")
  if [ $rc -eq 0 ] && [ -z "$(ls "$work/$t/crash")" ]; then
    echo "ok - fuzz_$t: ${runs:-?} inputs in $secs s, no crash ($(ls "$work/$t/corpus" | wc -l) in the corpus now)"
  else
    echo "FAIL - fuzz_$t: exit $rc"
    tail -40 "$work/$t/log"
    for f in "$work/$t/crash/"*; do
      [ -f "$f" ] && { echo "input $(basename "$f"):"; od -A d -c "$f" | head -20; }
    done
    status=1
  fi
done
exit $status
