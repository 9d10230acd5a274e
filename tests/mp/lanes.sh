#!/bin/bash
# lanes.sh CONFORMANCE PROBE: many parallel connections per pair.
# - 5 addresses per rank x DISTCOMM_SOCKETS=16 = 80 lanes: send/recv of
#   1 MiB and more is cut across the lanes and every byte must arrive
#   (once, 64 of the 80 pieces moved and both ends said OK).
# - 65 addresses per rank is refused at init with a clear error naming the
#   limit, at once (once, set-up waited for connections nobody polled).
set -u
conf=$1 probe=$2
. "$(dirname "$0")/mp_lib.sh"

# hostfile_k FILE N K BASE: N ranks, K 127.0.0.1 addresses each.
hostfile_k() {
  local file=$1 n=$2 k=$3 base=$4 r i sep="" s2
  {
    printf '['
    for ((r = 0; r < n; r++)); do
      printf '%s[' "$sep"
      s2=""
      for ((i = 0; i < k; i++)); do
        printf '%s"127.0.0.1:%d"' "$s2" $((base + r * k + i))
        s2=","
      done
      printf ']'
      sep=","
    done
    printf ']\n'
  } >"$file"
}

base=$(mp_port_base)
hostfile_k "$mp_tmp/hf80.json" 2 5 "$base"
pids=()
for r in 0 1; do
  MLX_RANK=$r MLX_HOSTFILE="$mp_tmp/hf80.json" DISTCOMM_SOCKETS=16 \
    DISTCOMM_SHM=0 DISTCOMM_TIMEOUT=60 \
    timeout -k 2 400 "$conf" --size 2 --counts 262144,1000003 \
    >"$mp_tmp/c$r" 2>&1 &
  pids+=($!)
  mp_pids+=($!)
done
for r in 0 1; do
  wait "${pids[$r]}"
  rc=$?
  if [ "$rc" -eq 0 ] && grep -q " 0 failed" "$mp_tmp/c$r"; then
    ok "80 lanes, rank $r: $(tail -1 "$mp_tmp/c$r")"
  else
    fail "80 lanes, rank $r: exit $rc: $(grep -m3 -i 'fail\|err' "$mp_tmp/c$r")"
  fi
done

base=$(mp_port_base)
hostfile_k "$mp_tmp/hf65.json" 2 65 "$base"
t0=$(now_ms)
out=$(MLX_RANK=0 MLX_HOSTFILE="$mp_tmp/hf65.json" DISTCOMM_TIMEOUT=20 \
  timeout -k 2 40 "$probe" init 2>&1)
rc=$? dt=$(($(now_ms) - t0))
if [ "$rc" -eq 3 ] && contains "$out" "ERR_CONFIG" "too many addresses" "64" &&
  [ "$dt" -lt 5000 ]; then
  ok "65 addresses per rank refused in $dt ms: $out"
else
  fail "65 addresses per rank: exit $rc after $dt ms, want 3 and ERR_CONFIG naming the limit of 64 at once: $out"
fi
mp_finish
