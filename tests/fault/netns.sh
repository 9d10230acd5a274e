#!/bin/bash
# netns.sh FAULT_PROBE: 2 hosts (network namespaces joined by a veth pair),
# one rank each, started by hand over the ring (TCP between the hosts):
#   lossy    an nftables rule drops 5% of the packets arriving at each host
#            -> 3 checked 16 MiB all_sums are right
#   slow     tc tbf limits each host's side to 200 Mbit/s -> right (slower;
#            the speed is not asserted: tests never time performance)
#   down     `ip link set down` on one side mid-collective, DISTCOMM_TIMEOUT=5
#            -> both ranks fail with ERR_TIMEOUT or ERR_PEER_LOST naming the
#            other, within the timeout + 4 s
# Needs root, iproute2 and nft (skipped, exit 77, otherwise). The namespaces
# are removed even on failure.
set -u
probe=$1
. "$(dirname "$0")/../mp/mp_lib.sh"
if ! command -v nft >/dev/null; then echo "skip: needs nftables"; exit 77; fi
mp_netns_pair dcf

base=$(mp_port_base)
printf '[["%s.1:%d"],["%s.2:%d"]]\n' "$net" "$base" "$net" $((base + 1)) >"$mp_tmp/hf.json"
export DISTCOMM_JOB_ID
DISTCOMM_JOB_ID=$(printf '%04x%04x%04x%04x' $RANDOM $RANDOM $RANDOM $RANDOM)
# Two hosts: a job across hosts needs a token (protected mode).
export DISTCOMM_JOB_TOKEN
DISTCOMM_JOB_TOKEN=fault-netns-token-$DISTCOMM_JOB_ID

# start NAME TIMEOUT ARGS...: rank 0 on host a, rank 1 on host b.
start() {
  local name=$1 tmo=$2 r ns
  shift 2
  pids=()
  for r in 0 1; do
    ns=$a; [ $r -eq 1 ] && ns=$b
    ip netns exec "$ns" env MLX_RANK=$r MLX_HOSTFILE="$mp_tmp/hf.json" \
      DISTCOMM_TIMEOUT="$tmo" timeout -k 2 90 "$probe" all_sum --mib 16 "$@" \
      >"$mp_tmp/$name.$r" 2>&1 &
    pids+=($!)
    mp_pids+=($!)
  done
}

finish() { wait "${pids[0]}"; rc0=$?; wait "${pids[1]}"; rc1=$?; }

# right NAME: both ranks did their checked all_sums.
right() {
  local name=$1 what=$2
  if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && grep -q "3 all_sum done, checked" "$mp_tmp/$name.0" &&
     grep -q "3 all_sum done, checked" "$mp_tmp/$name.1"; then
    ok "$what: 3 checked 16 MiB all_sums right on both hosts"
  else
    fail "$what: exit $rc0/$rc1: $(cat "$mp_tmp/$name".*)"
  fi
}

nft_drop() { # nft_drop NS: drop 5% of what arrives
  ip netns exec "$1" nft -f - <<'EOF'
table inet dcfault {
  chain in { type filter hook input priority 0; numgen random mod 100 < 5 counter drop; }
}
EOF
}
if nft_drop "$a" && nft_drop "$b"; then
  start lossy 30 --iters 3 --check
  finish
  drops=$( (ip netns exec "$a" nft list table inet dcfault; ip netns exec "$b" nft list table inet dcfault) |
          sed -n 's/.*counter packets \([0-9]*\) .*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
  right lossy "5% of packets dropped ($drops dropped)"
  [ "$drops" -gt 0 ] || fail "the nftables rule dropped nothing"
  ip netns exec "$a" nft delete table inet dcfault
  ip netns exec "$b" nft delete table inet dcfault
else
  fail "nftables: could not add the drop rule"
fi

if ip -n "$a" link show "$va" >/dev/null &&
   ip netns exec "$a" tc qdisc add dev "$va" root tbf rate 200mbit burst 64kb latency 50ms &&
   ip netns exec "$b" tc qdisc add dev "$vb" root tbf rate 200mbit burst 64kb latency 50ms; then
  t0=$(now_ms)
  start slow 30 --iters 3 --check
  finish
  right slow "200 Mbit/s links ($(($(now_ms) - t0)) ms)"
  ip netns exec "$a" tc qdisc del dev "$va" root
  ip netns exec "$b" tc qdisc del dev "$vb" root
else
  fail "tc: could not add the tbf qdisc"
fi

start down 5 --linger 0
if wait_for "$mp_tmp/down.0" "ready pid" 30 && wait_for "$mp_tmp/down.1" "ready pid" 30; then
  sleep 0.2
  since=$(date +%s.%N)
  ip -n "$a" link set "$va" down
  finish
  rcs=("$rc0" "$rc1")
  for r in 0 1; do
    line=$(grep "^rank $r: ERR " "$mp_tmp/down.$r")
    at=$(printf '%s\n' "$line" | sed -n 's/.* at \([0-9.]*\) after .*/\1/p')
    late=$(awk -v a="${at:-0}" -v k="$since" 'BEGIN { printf "%.3f", a - k }')
    if ! contains "$line" "rank $((1 - r))" ||
       ! { contains "$line" ERR_TIMEOUT || contains "$line" ERR_PEER_LOST; }; then
      fail "link down: rank $r: want ERR_TIMEOUT or ERR_PEER_LOST naming rank $((1 - r)): $(cat "$mp_tmp/down.$r")"
    elif [ "${rcs[$r]}" -ne 4 ]; then # 4: failed, then freed cleanly
      fail "link down: rank $r exit ${rcs[$r]}: $(cat "$mp_tmp/down.$r")"
    elif ! awk -v l="$late" 'BEGIN { exit !(l > 0 && l < 9) }'; then
      fail "link down: rank $r failed $late s after the link went down (timeout 5 s): $line"
    else
      ok "link down: rank $r after $late s: ${line#*: }"
    fi
  done
else
  fail "link down: the ranks did not start: $(cat "$mp_tmp"/down.*)"
  finish
fi
mp_finish
