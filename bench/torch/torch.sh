#!/bin/bash
# torch.distributed on "distcomm" vs "gloo", 2 ranks on this host, over
# shared memory and over TCP (DISTCOMM_SHM=0; Gloo is TCP either way).
#   bench/torch/torch.sh [OUTDIR]        (BUILD=build, N=2; extra args: TORCH_BENCH_ARGS)
# Writes OUTDIR/torch-shm-N.txt and OUTDIR/torch-tcp-N.txt (see torch.md).
set -eu
n=${N:-2}
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../../build}
out=${1:-$here/../results/$(date +%F)}
mkdir -p "$out"
for link in shm tcp; do
  shm=1; [ "$link" = tcp ] && shm=0
  DISTCOMM_SHM=$shm PYTHONPATH="$build/python" "$build/bin/distcomm-launch" -n "$n" -- \
    /usr/bin/python3 "$here/torch_bench.py" ${TORCH_BENCH_ARGS:-} | tee "$out/torch-$link-$n.txt"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/torch-tcp-$n.txt"
