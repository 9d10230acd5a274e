#!/bin/bash
# one_host_sockets.sh PROBE LAUNCHER: one socket per pair when more than 16
# ranks share one IP address and DISTCOMM_SOCKETS is unset (256 ranks on a
# host: half the connections to set up); 2 at 16 ranks, across two
# addresses, or when it is set. Two ranks whose DISTCOMM_SOCKETS differ
# fail at once naming it (once, the one with fewer waited out the timeout),
# and so do two whose DISTCOMM_SHM differs.
set -u
probe=$1 launcher=$2
. "$(dirname "$0")/mp_lib.sh"

# sockets_seen N IP1 IP2 [ENV...]: N ranks started by hand (ranks alternate
# between the two addresses), each initialising with DISTCOMM_VERBOSE=1;
# prints the distinct "N connection(s) per peer" counts the ranks logged,
# or "failed" when a rank did not init.
sockets_seen() {
  local n=$1 ip1=$2 ip2=$3 base r ip pids=() bad=0
  shift 3
  base=$(mp_port_base)
  {
    printf '['
    for ((r = 0; r < n; r++)); do
      ip=$ip1
      [ $((r % 2)) -eq 1 ] && ip=$ip2
      printf '%s["%s:%d"]' "$([ "$r" -gt 0 ] && echo ,)" "$ip" $((base + r))
    done
    printf ']\n'
  } >"$mp_tmp/hf_one.json"
  for ((r = 0; r < n; r++)); do
    env MLX_RANK=$r MLX_HOSTFILE="$mp_tmp/hf_one.json" DISTCOMM_TIMEOUT=60 \
      DISTCOMM_VERBOSE=1 "$@" timeout -k 2 100 "$probe" init \
      >"$mp_tmp/s$r" 2>&1 &
    pids+=($!)
    mp_pids+=($!)
  done
  for ((r = 0; r < n; r++)); do
    wait "${pids[$r]}" || bad=1
  done
  if [ $bad -ne 0 ]; then
    echo failed
    return
  fi
  cat "$mp_tmp"/s* | grep -o '[0-9]* connection(s) per peer' | sort -u |
    tr '\n' ' '
  rm -f "$mp_tmp"/s*
}

for want in "17 127.0.0.1 127.0.0.1|1 connection(s) per peer " \
  "16 127.0.0.1 127.0.0.1|2 connection(s) per peer " \
  "17 127.0.0.1 127.0.0.2|2 connection(s) per peer " \
  "17 127.0.0.1 127.0.0.1 DISTCOMM_SOCKETS=2|2 connection(s) per peer " \
  "17 127.0.0.1 127.0.0.1 DISTCOMM_SHM=0|1 connection(s) per peer "; do
  # shellcheck disable=SC2086 # the case's words are its arguments
  got=$(sockets_seen ${want%%|*})
  if [ "$got" = "${want#*|}" ]; then
    ok "${want%%|*}: every rank logged ${got}"
  else
    fail "${want%%|*}: want every rank to log '${want#*|}', got '$got'"
  fi
done

# A job of 17 ranks on one host through the launcher (its own hostfile):
# one socket per pair on every rank, and three all_sums of 4 MiB finish.
out=$(DISTCOMM_VERBOSE=1 timeout -k 2 200 "$launcher" -n 17 -- "$probe" loop 4 3 2>&1)
rc=$?
n1=$(grep -c 'ring ready: .*, 1 connection(s) per peer' <<<"$out")
if [ $rc -eq 0 ] && [ "$n1" -eq 17 ]; then
  ok "17 launched ranks: one connection per peer on each, all_sum done"
else
  fail "17 launched ranks: exit $rc, $n1 of 17 logged one connection per peer: $(tail -3 <<<"$out")"
fi
# Two ranks by hand, rank 0 with DISTCOMM_SOCKETS=$1 and rank 1 with $2:
# rank 1 (it dials) fails within 3 s naming the variable; rank 0 is only
# refused a connection, so it waits out its 4 s and names the refusal.
for pair in "1 2" "2 1"; do
  set -- $pair
  base=$(mp_port_base)
  printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' "$base" $((base + 1)) >"$mp_tmp/hf_mix.json"
  MLX_RANK=0 MLX_HOSTFILE="$mp_tmp/hf_mix.json" DISTCOMM_SOCKETS=$1 \
    DISTCOMM_TIMEOUT=4 timeout -k 2 30 "$probe" init >"$mp_tmp/m0" 2>&1 &
  p0=$!
  mp_pids+=($p0)
  t0=$(now_ms)
  out1=$(MLX_RANK=1 MLX_HOSTFILE="$mp_tmp/hf_mix.json" DISTCOMM_SOCKETS=$2 \
    DISTCOMM_TIMEOUT=20 timeout -k 2 30 "$probe" init 2>&1)
  rc1=$? dt=$(($(now_ms) - t0))
  wait $p0
  rc0=$? out0=$(cat "$mp_tmp/m0")
  if [ $rc1 -ne 0 ] && [ $dt -lt 3000 ] && contains "$out1" "ERR_CONFIG" \
    "refused rank 1's connection" "DISTCOMM_SOCKETS"; then
    ok "sockets $1 vs $2: rank 1 failed in $dt ms: $out1"
  else
    fail "sockets $1 vs $2: rank 1 exit $rc1 after $dt ms: $out1"
  fi
  if [ $rc0 -ne 0 ] && contains "$out0" "ERR_TIMEOUT" \
    "makes $2 connection(s) per pair, this rank $1" "DISTCOMM_SOCKETS"; then
    ok "sockets $1 vs $2: rank 0 named the refusal: $out0"
  else
    fail "sockets $1 vs $2: rank 0 exit $rc0: $out0"
  fi
done

# DISTCOMM_SHM=0 on rank 0 only: one rank sets up shared memory, the other
# goes on to its first op; both fail within 3 s naming the variable (and
# once, not "init: init:").
base=$(mp_port_base)
printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' "$base" $((base + 1)) >"$mp_tmp/hf_shm.json"
t0=$(now_ms)
MLX_RANK=0 MLX_HOSTFILE="$mp_tmp/hf_shm.json" DISTCOMM_SHM=0 DISTCOMM_TIMEOUT=20 \
  timeout -k 2 30 "$probe" init >"$mp_tmp/h0" 2>&1 &
p0=$!
mp_pids+=($p0)
MLX_RANK=1 MLX_HOSTFILE="$mp_tmp/hf_shm.json" DISTCOMM_TIMEOUT=20 \
  timeout -k 2 30 "$probe" init >"$mp_tmp/h1" 2>&1
rc1=$?
wait $p0
rc0=$? dt=$(($(now_ms) - t0))
for r in 0 1; do
  out=$(cat "$mp_tmp/h$r")
  rc=$rc0
  [ $r -eq 1 ] && rc=$rc1
  if [ $rc -ne 0 ] && [ $dt -lt 3000 ] && contains "$out" "ERR_MISMATCH" \
    "DISTCOMM_SHM" && [[ $out != *"init: init:"* ]]; then
    ok "DISTCOMM_SHM=0 on rank 0 only, rank $r failed ($dt ms): $out"
  else
    fail "DISTCOMM_SHM=0 on rank 0 only, rank $r: exit $rc after $dt ms: $out"
  fi
done
mp_finish
