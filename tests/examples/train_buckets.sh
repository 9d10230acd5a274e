#!/bin/bash
# train_buckets.sh LAUNCHER TRAIN
# How gradients are packed must not change the result: on 2 ranks each
# element is a + b whatever bucket it travels in, so the default bucket,
# one all_sum per tensor (--bucket-bytes 0) and small buckets must end with
# bit-identical weights (the same checksum) and report 1, 7 and 3 all_sums
# per step.
set -u
launcher=$1 train=$2
out=$(mktemp /tmp/distcomm-trainb.XXXXXX)
trap 'rm -f "$out"' EXIT
sums=""
for b in 33554432 0 8192; do
  timeout -k 5 120 "$launcher" -n 2 -- "$train" --steps 60 --bucket-bytes "$b" >"$out" 2>&1 ||
    { cat "$out"; echo "FAIL - --bucket-bytes $b"; exit 1; }
  cat "$out"
  s=$(sed -n 's/.*averaged in \([0-9]*\) all_sum.*/\1/p' "$out")
  c=$(sed -n 's/^weights identical on all 2 ranks (checksum \(0x[0-9a-f]*\)).*/\1/p' "$out")
  [ -n "$c" ] || { echo "FAIL - no checksum line"; exit 1; }
  sums="$sums $s"
  sum_list="${sum_list:-} $c"
done
echo "all_sums per step:$sums; checksums:$sum_list"
[ "$sums" = " 1 7 3" ] || { echo "FAIL - expected 1 7 3 all_sums per step"; exit 1; }
[ "$(echo $sum_list | tr ' ' '\n' | sort -u | wc -l)" -eq 1 ] ||
  { echo "FAIL - checksums differ between bucket sizes"; exit 1; }
echo "ok - bucket size changes the number of all_sums, not the weights"
