#!/bin/bash
# bucketing.sh [BUILD_DIR] [bench-bucketing options]
# "Few large reductions instead of many small ones" (seed 002), measured:
# 200 gradient tensors of 4 KiB averaged with dc_average_gradients on 2
# local ranks, bucketed (MLX's default 32 MiB: one all_sum) versus one
# tensor at a time (200 all_sums), through the real launcher.
set -eu
build=${1:-$(dirname "$0")/../../build}
[ $# -gt 0 ] && shift
launcher=$build/bin/distcomm-launch
bench=$build/bin/bench-bucketing
for f in "$launcher" "$bench"; do
  [ -x "$f" ] || { echo "bucketing.sh: $f not built (cmake --build $build)" >&2; exit 1; }
done
exec timeout -k 5 600 "$launcher" -n 2 -- "$bench" "$@"
