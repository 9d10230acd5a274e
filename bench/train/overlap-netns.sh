#!/bin/bash
# overlap-netns.sh [BUILD] [ROUNDS] [RATE] [-- TRAIN ARGS...]
# examples/train on 2 "hosts" (network namespaces joined by a veth pair,
# each side shaped by tc tbf to RATE, default 1gbit), one rank each over
# the ring's TCP, in turns in one run: blocking with 1 MiB buckets and
# --overlap (1 MiB buckets). Unlike loopback TCP, where a transfer is only
# CPU work (the kernel's copies) that competes with backward for the same
# cores, a shaped link makes the transfer wait on the wire, which backward
# can hide. Default size: --hidden 1024 --layers 8 --batch 16 (7.4 M
# parameters, 28 MiB of gradients a step, 8 samples per rank). Figures are
# rank 0's, medians of ROUNDS (default 3). "hidden" = 1 - communication of
# --overlap / communication of the blocking run. Needs root and iproute2.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
rounds=${2:-3}
rate=${3:-1gbit}
shift $(($# < 3 ? $# : 3))
[ "${1:-}" = -- ] && shift
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--hidden 1024 --layers 8 --batch 16 --steps 10)
# shellcheck source=../../tests/mp/mp_lib.sh
. "$here/../../tests/mp/mp_lib.sh"
mp_netns_pair dcov
# shellcheck disable=SC2154 # a, b, va, vb, net: set by mp_netns_pair
if ! ip netns exec "$a" tc qdisc add dev "$va" root tbf rate "$rate" burst 256kb latency 50ms ||
  ! ip netns exec "$b" tc qdisc add dev "$vb" root tbf rate "$rate" burst 256kb latency 50ms; then
  echo "overlap-netns: tc tbf failed"
  exit 1
fi
modes=(blocking-1MiB overlap-1MiB)
flags() {
  case $1 in
  blocking-1MiB) echo "--bucket-bytes 1048576" ;;
  overlap-1MiB) echo "--overlap" ;;
  esac
}
echo "# $(date -u) load before: $(uptime)"
for ((i = 0; i < rounds; i++)); do
  for m in "${modes[@]}"; do
    base=$(mp_port_base)
    printf '[["%s.1:%d"],["%s.2:%d"]]\n' "$net" "$base" "$net" $((base + 1)) >"$mp_tmp/hf.json"
    export DISTCOMM_JOB_ID
    DISTCOMM_JOB_ID=$(printf '%04x%04x%04x%04x' $RANDOM $RANDOM $RANDOM $RANDOM)
    pids=()
    for r in 0 1; do
      ns=$a
      [ $r -eq 1 ] && ns=$b
      # shellcheck disable=SC2046
      ip netns exec "$ns" env MLX_RANK=$r MLX_HOSTFILE="$mp_tmp/hf.json" \
        timeout -k 2 600 "$build/examples/train" "${args[@]}" $(flags $m) >"$mp_tmp/$m.$i.$r" 2>&1 &
      pids+=($!)
      mp_pids+=($!)
    done
    wait "${pids[0]}"; rc0=$?
    wait "${pids[1]}"; rc1=$?
    [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] || { cat "$mp_tmp/$m.$i".*; echo "FAIL - $m"; exit 1; }
    grep -q "^weights identical on all 2 ranks" "$mp_tmp/$m.$i.0" || { echo "FAIL - $m: weights"; exit 1; }
    sed -n 's/^per step: \([0-9.]*\) ms, compute \([0-9.]*\) ms, communication \([0-9.]*\) ms.*/\1 \2 \3/p' \
      "$mp_tmp/$m.$i.0" | sed "s/^/$m /" >>"$mp_tmp/all"
  done
done
echo "# load after: $(uptime)"
med() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "train ${args[*]}, 2 ranks in 2 network namespaces, veth shaped to $rate each way, median of $rounds rounds"
printf '%-16s %10s %12s %12s %8s\n' mode "step (ms)" "compute (ms)" "comm (ms)" "comm %"
for m in "${modes[@]}"; do
  s=$(awk -v m=$m '$1 == m { print $2 }' "$mp_tmp/all" | med)
  c=$(awk -v m=$m '$1 == m { print $3 }' "$mp_tmp/all" | med)
  k=$(awk -v m=$m '$1 == m { print $4 }' "$mp_tmp/all" | med)
  eval "comm_${m//-/_}=$k"
  printf '%-16s %10.2f %12.2f %12.2f %7.0f%%\n' $m "$s" "$c" "$k" "$(awk -v k="$k" -v c="$c" 'BEGIN { print 100 * k / (k + c) }')"
done
awk -v b="$comm_blocking_1MiB" -v o="$comm_overlap_1MiB" 'BEGIN {
  printf "hidden by --overlap: %.0f%% of the blocking run'"'"'s communication\n", 100 * (1 - o / b) }'
echo "runs (mode, step, compute, comm ms):"
sed 's/^/  /' "$mp_tmp/all"
