#!/bin/bash
# kill_launched.sh LAUNCHER PROBE: through distcomm-launch, rank 2 of 4
# SIGKILLs itself 300 ms into a 64 MiB all_sum. The launcher must exit
# non-zero with a line naming rank 2 and signal 9, and stop the other ranks
# (they linger 20 s after their own error; none may outlive the launcher).
set -u
launcher=$1 probe=$2
. "$(dirname "$0")/mp_lib.sh"

t0=$(now_ms)
DISTCOMM_TIMEOUT=30 timeout -k 5 60 "$launcher" -n 4 -- \
  "$probe" loop 64 1000000 --die 2:300 --linger 20 >"$mp_tmp/out" 2>&1
rc=$?
dt=$(($(now_ms) - t0))
out=$(cat "$mp_tmp/out")
line=$(grep "rank 2" "$mp_tmp/out" | grep "signal 9")
if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
  fail "launcher exit $rc, want a failure status: $out"
elif [ -z "$line" ]; then
  fail "no launcher line names rank 2 and signal 9: $out"
elif [ $dt -ge 20000 ]; then
  fail "launcher took $dt ms (ranks linger 20 s: it waited instead of stopping them)"
else
  ok "launcher exit $rc after $dt ms: $line"
fi

sleep 1
while read -r p; do
  mp_pids+=("$p")
  if kill -0 "$p" 2>/dev/null; then fail "rank pid $p outlived the launcher"; fi
done < <(sed -n 's/.*ready pid \([0-9]*\).*/\1/p' "$mp_tmp/out")
[ "$(grep -c 'ready pid' "$mp_tmp/out")" -eq 4 ] || fail "not all 4 ranks reported ready: $out"
mp_finish
