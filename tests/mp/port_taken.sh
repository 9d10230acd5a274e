#!/bin/bash
# port_taken.sh PROBE: rank 1's port is already taken by another program.
# Rank 1 must fail at once with one line naming the port and the rank; rank 0,
# whose connection reaches the squatter (which never answers the handshake),
# must give up within its timeout instead of hanging.
set -u
probe=$1
. "$(dirname "$0")/mp_lib.sh"

# Find a port pair whose second port we can occupy.
for _ in 1 2 3 4 5; do
  base=$(mp_port_base)
  port=$((base + 1))
  "$probe" occupy "$port" 60 >"$mp_tmp/occupy" 2>&1 &
  mp_pids+=($!)
  wait_for "$mp_tmp/occupy" "listening" 5 && break
done
grep -q listening "$mp_tmp/occupy" || { fail "could not occupy a port"; mp_finish; }
mp_hostfile "$mp_tmp/hf.json" 2 "$base"

export MLX_HOSTFILE="$mp_tmp/hf.json" DISTCOMM_TIMEOUT=3
MLX_RANK=0 timeout -k 2 20 "$probe" init >"$mp_tmp/r0" 2>&1 &
r0=$!
mp_pids+=("$r0")
t0=$(now_ms)
out=$(MLX_RANK=1 timeout -k 2 20 "$probe" init 2>&1)
rc=$?
dt=$(($(now_ms) - t0))
lines=$(printf '%s\n' "$out" | wc -l)
if [ "$rc" -ne 3 ] || [ "$lines" -ne 1 ]; then
  fail "rank 1: exit $rc (want 3), $lines lines: $out"
elif ! contains "$out" "ERR " "$port" "rank 1"; then
  fail "rank 1: the error does not name port $port and rank 1: $out"
elif [ "$dt" -ge 3000 ]; then
  fail "rank 1: took $dt ms: $out"
else
  ok "rank 1 ($dt ms): $out"
fi

wait "$r0"
rc=$?
dt=$(($(now_ms) - t0))
out=$(cat "$mp_tmp/r0")
if [ "$rc" -ne 3 ] || ! contains "$out" "ERR "; then
  fail "rank 0: exit $rc (want 3): $out"
elif [ "$dt" -ge 6000 ]; then
  fail "rank 0: took $dt ms with DISTCOMM_TIMEOUT=3: $out"
else
  ok "rank 0 gave up ($dt ms): $out"
fi
mp_finish
