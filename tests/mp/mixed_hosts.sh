#!/bin/bash
# mixed_hosts.sh CONFORMANCE: 2 hosts x 2 ranks, the hosts being network
# namespaces joined by a veth pair. Ranks use shared memory with the rank on
# their own host and TCP to the other host, and pass the same conformance
# checks as with TCP only (DISTCOMM_SHM=0). Needs root and `ip netns`:
# skipped (exit 77) otherwise. Everything created is removed, even on failure.
set -u
conf=$1
. "$(dirname "$0")/mp_lib.sh"
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
  echo "skip: needs root and iproute2"; exit 77
fi
tag=$$
a=dcA$tag b=dcB$tag net=10.$((200 + tag % 50)).$((tag / 50 % 250))
undo() {
  ip netns del "$a" 2>/dev/null
  ip netns del "$b" 2>/dev/null
  mp_cleanup
}
trap undo EXIT
if ! ip netns add "$a" 2>/dev/null; then echo "skip: ip netns unavailable"; exit 77; fi
ip netns add "$b" &&
  ip link add "va$tag" netns "$a" type veth peer name "vb$tag" netns "$b" &&
  ip -n "$a" addr add "$net.1/24" dev "va$tag" && ip -n "$b" addr add "$net.2/24" dev "vb$tag" &&
  ip -n "$a" link set "va$tag" up && ip -n "$b" link set "vb$tag" up &&
  ip -n "$a" link set lo up && ip -n "$b" link set lo up ||
  { fail "could not build the namespaces"; mp_finish; }

base=$(mp_port_base)
printf '[["%s.1:%d"],["%s.1:%d"],["%s.2:%d"],["%s.2:%d"]]\n' \
  "$net" "$base" "$net" $((base + 1)) "$net" $((base + 2)) "$net" $((base + 3)) >"$mp_tmp/hf.json"

run() { # run MODE: the four ranks, two per namespace
  local mode=$1 r ns pids=() rc=0
  for r in 0 1 2 3; do
    ns=$a; [ $r -ge 2 ] && ns=$b
    ip netns exec "$ns" env MLX_RANK=$r MLX_HOSTFILE="$mp_tmp/hf.json" \
      MLX_RING_VERBOSE=1 DISTCOMM_TIMEOUT=60 DISTCOMM_SHM="$mode" \
      timeout -k 5 400 "$conf" --size 4 --quick >"$mp_tmp/$mode.$r" 2>&1 &
    pids+=($!)
  done
  for r in 0 1 2 3; do wait "${pids[$r]}" || rc=1; done
  return $rc
}

if run 1; then ok "2x2 with shared memory: every rank passed"; else
  fail "2x2 with shared memory: $(grep -h -i -E "fail|err" "$mp_tmp"/1.* | head -5)"; fi
for r in 0 1 2 3; do
  if grep -q "shared memory with 1 same-host peer" "$mp_tmp/1.$r"; then
    ok "rank $r: shared memory with its own host only"
  else fail "rank $r: expected shared memory with exactly 1 peer"; fi
done
if run 0; then ok "2x2 over TCP only: every rank passed"; else
  fail "2x2 over TCP only: $(grep -h -i -E "fail|err" "$mp_tmp"/0.* | head -5)"; fi
if grep -q "shared memory" "$mp_tmp"/0.*; then fail "DISTCOMM_SHM=0 still used shared memory"; fi
mp_finish
