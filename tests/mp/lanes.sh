#!/bin/bash
# lanes.sh CONFORMANCE PROBE: many parallel connections per pair.
# - 5 addresses per rank x DISTCOMM_SOCKETS=16 = 80 lanes: send/recv of
#   1 MiB and more is cut across the lanes and every byte must arrive
#   (once, 64 of the 80 pieces moved and both ends said OK).
# - 65 addresses per rank is refused at init with a clear error naming the
#   limit, at once (once, set-up waited for connections nobody polled).
# - One socket per pair when more than 16 ranks share one IP address and
#   DISTCOMM_SOCKETS is unset (256 ranks on a host: half the connections
#   to set up); 2 at 16 ranks, across two addresses, or when it is set.
set -u
conf=$1 probe=$2 launcher=$3
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
mp_finish
