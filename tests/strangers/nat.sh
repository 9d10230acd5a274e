#!/bin/bash
# nat.sh PROBE STRANGER: a stranger NAT'd behind the job's host (issue 33,
# M1). Host a runs a job without a token, both ranks on a's address, over
# TCP (DISTCOMM_SHM=0). Host b's traffic to a is source-NAT'd to a's own
# address as it comes in (nft, the input hook), so the stranger on b that
# claims rank 1 comes from "rank 1's address in the plan". The kernel finds
# no socket of a's with that 4-tuple (it lives in b): refused. The real rank
# 1 then joins. Needs root, ip netns and nft (skipped, 77, otherwise).
set -u
probe=$1 stranger=$2
. "$(dirname "$0")/../mp/mp_lib.sh"
if ! command -v nft >/dev/null; then echo "skip: needs nftables"; exit 77; fi
mp_netns_pair nat
unset DISTCOMM_JOB_TOKEN DISTCOMM_JOB_TOKEN_FILE DISTCOMM_INSECURE
export DISTCOMM_TIMEOUT=20 DISTCOMM_JOB_ID=7a2 DISTCOMM_SHM=0 DISTCOMM_SOCKETS=1
if ! ip netns exec "$a" nft -f - <<EOF2
table ip dcnat {
  chain in {
    type nat hook input priority 100;
    ip saddr $net.2 snat to $net.1
  }
}
EOF2
then
  echo "skip: nft cannot source-NAT on the input hook here"
  exit 77
fi
base=$(mp_port_base)
printf '[["%s.1:%d"],["%s.1:%d"]]\n' "$net" "$base" "$net" $((base + 1)) >"$mp_tmp/hf.json"
ip netns exec "$a" env MLX_HOSTFILE="$mp_tmp/hf.json" MLX_RANK=0 MLX_RING_VERBOSE=1 \
  timeout -k 2 60 "$probe" init >"$mp_tmp/r0" 2>&1 &
r0=$!
mp_pids+=("$r0")
out=$(ip netns exec "$b" timeout -k 2 40 "$stranger" impostor "$net.1:$base" 7a2 2 2>&1)
rc=$?
from=$(sed -n 's/^stranger impostor from //p' <<<"$out" | tail -1)
if [ $rc -eq 0 ] && contains "$out" "impostor: refused"; then
  ok "the NAT'd impostor was refused: $(tail -1 <<<"$out")"
else
  fail "the NAT'd impostor (exit $rc): $out"
fi
out=$(ip netns exec "$a" env MLX_HOSTFILE="$mp_tmp/hf.json" MLX_RANK=1 \
  timeout -k 2 40 "$probe" init 2>&1)
rc=$?
wait "$r0"
rc0=$?
log=$(cat "$mp_tmp/r0")
if [ $rc -eq 0 ] && [ $rc0 -eq 0 ] && contains "$log" "OK rank 0 size 2"; then
  ok "the real rank 1 joined: $out"
else
  fail "the job: exits $rc0/$rc: $out / $log"
fi
if contains "$log" "refused a connection from $net.1:" "only this host's processes"; then
  ok "rank 0 logged it, the source being its own address: $(grep -m1 refused <<<"$log")"
else
  fail "rank 0's log: $log"
fi
mp_finish
