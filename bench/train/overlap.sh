#!/bin/bash
# overlap.sh [BUILD] [ROUNDS] [-- TRAIN ARGS...]
# examples/train on 2 ranks over TCP (DISTCOMM_SHM=0) at a size where
# communication matters (default --hidden 1024 --layers 8 --batch 4: 7.4 M
# parameters, 28 MiB of gradients a step, 2 samples per rank), in turns in
# one run: blocking with MLX's 32 MiB bucket, blocking with 1 MiB buckets
# (the buckets --overlap uses), and --overlap. Each figure is the median of
# ROUNDS (default 3) runs. "hidden" = 1 - exposed communication of --overlap
# / communication of the blocking run with the same buckets.
set -u
build=${1:-build}
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
[ "${1:-}" = -- ] && shift
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--hidden 1024 --layers 8 --batch 4 --steps 20)
tmp=$(mktemp -d /tmp/distcomm-overlap.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
modes=(blocking-32MiB blocking-1MiB overlap-1MiB)
flags() {
  case $1 in
  blocking-32MiB) echo "" ;;
  blocking-1MiB) echo "--bucket-bytes 1048576" ;;
  overlap-1MiB) echo "--overlap" ;;
  esac
}
for ((i = 0; i < rounds; i++)); do
  for m in "${modes[@]}"; do
    # shellcheck disable=SC2046
    DISTCOMM_SHM=0 timeout 600 "$build/bin/distcomm-launch" -n 2 -- "$build/examples/train" \
      "${args[@]}" $(flags $m) >"$tmp/$m.$i" 2>&1 || { cat "$tmp/$m.$i"; echo "FAIL - $m"; exit 1; }
    grep -q "^weights identical on all 2 ranks" "$tmp/$m.$i" || { echo "FAIL - $m: weights"; exit 1; }
    sed -n 's/^per step: \([0-9.]*\) ms, compute \([0-9.]*\) ms, communication \([0-9.]*\) ms.*/\1 \2 \3/p' \
      "$tmp/$m.$i" | sed "s/^/$m /" >>"$tmp/all"
  done
done
med() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "train ${args[*]}, 2 ranks over TCP, median of $rounds rounds"
printf '%-16s %10s %12s %12s %8s\n' mode "step (ms)" "compute (ms)" "comm (ms)" "comm %"
for m in "${modes[@]}"; do
  s=$(awk -v m=$m '$1 == m { print $2 }' "$tmp/all" | med)
  c=$(awk -v m=$m '$1 == m { print $3 }' "$tmp/all" | med)
  k=$(awk -v m=$m '$1 == m { print $4 }' "$tmp/all" | med)
  eval "comm_${m//-/_}=$k"
  printf '%-16s %10.2f %12.2f %12.2f %7.0f%%\n' $m "$s" "$c" "$k" "$(awk -v k="$k" -v c="$c" 'BEGIN { print 100 * k / (k + c) }')"
done
awk -v b="$comm_blocking_1MiB" -v o="$comm_overlap_1MiB" -v b32="$comm_blocking_32MiB" 'BEGIN {
  printf "hidden by --overlap: %.0f%% of the blocking 1 MiB run'"'"'s communication (%.0f%% of the 32 MiB run'"'"'s)\n",
    100 * (1 - o / b), 100 * (1 - o / b32) }'
echo "runs (mode, step, compute, comm ms):"
sed 's/^/  /' "$tmp/all"
