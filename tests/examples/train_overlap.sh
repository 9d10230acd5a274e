#!/bin/bash
# train_overlap.sh LAUNCHER TRAIN
# --overlap on 2 ranks: each layer's bucket starts while backward runs, one
# wait per step. It must end with weights identical on both ranks and, as on
# 2 ranks every element is a + b whichever bucket it travels in, with the
# same checksum as the blocking run; it reports its buckets as overlapped,
# more than one all_sum per step (one per large layer), and the
# communication share and step time split.
set -u
launcher=$1 train=$2
out=$(mktemp /tmp/distcomm-traino.XXXXXX)
trap 'rm -f "$out"' EXIT
args=(--steps 30 --hidden 96 --layers 4 --batch 32)
sums=()
for mode in blocking overlap; do
  extra=()
  [ "$mode" = overlap ] && extra=(--overlap --bucket-bytes 20000)
  timeout -k 5 120 "$launcher" -n 2 -- "$train" "${args[@]}" "${extra[@]}" >"$out" 2>&1 ||
    { cat "$out"; echo "FAIL - $mode run"; exit 1; }
  cat "$out"
  c=$(sed -n 's/^weights identical on all 2 ranks (checksum \(0x[0-9a-f]*\)).*/\1/p' "$out")
  [ -n "$c" ] || { echo "FAIL - $mode: no checksum line"; exit 1; }
  sums+=("$c")
  grep -q "communication [0-9]*% of step time" "$out" ||
    { echo "FAIL - $mode: no communication share"; exit 1; }
  grep -q "^per step: [0-9.]* ms, compute" "$out" ||
    { echo "FAIL - $mode: no step time split"; exit 1; }
done
grep -q "overlapped with backward" "$out" || { echo "FAIL - not overlapped"; exit 1; }
n=$(sed -n 's/.*averaged in \([0-9]*\) all_sum.*/\1/p' "$out")
[ "${n:-0}" -gt 1 ] || { echo "FAIL - --overlap made ${n:-no} all_sums per step, want one per layer"; exit 1; }
[ "${sums[0]}" = "${sums[1]}" ] ||
  { echo "FAIL - checksums differ: blocking ${sums[0]}, overlap ${sums[1]}"; exit 1; }
echo "ok - --overlap ends with the blocking run's weights (${sums[1]}), $n all_sums per step"
