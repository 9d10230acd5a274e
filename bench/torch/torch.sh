#!/bin/bash
# torch.distributed on "distcomm" vs "gloo", N ranks on this host, over
# shared memory and over TCP (DISTCOMM_SHM=0). LOCAL_WORLD_SIZE=N is set in
# every rank so that a Gloo with the shared-memory all_reduce (gloo#458)
# takes it; the run's header says whether this torch has it.
#   bench/torch/torch.sh [OUTDIR]        (BUILD=build, N=2; extra args: TORCH_BENCH_ARGS)
#   PY=venv/bin/python LAUNCH=venv/bin/distcomm-launch bench/torch/torch.sh OUT
#     (a venv with torch and distcomm from pip: see torch.md)
# Writes OUTDIR/torch-shm-N.txt and OUTDIR/torch-tcp-N.txt (see torch.md).
set -euo pipefail
n=${N:-2}
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../../build}
py=${PY:-/usr/bin/python3}
launch=${LAUNCH:-$build/bin/distcomm-launch}
pypath=$build/python # the build's module, unless PY names an interpreter with its own
[ -n "${PY:-}" ] && pypath=${PYTHONPATH:-}
out=${1:-$here/../results/$(date +%F)}
mkdir -p "$out"
for link in shm tcp; do
  shm=1; [ "$link" = tcp ] && shm=0
  # shellcheck disable=SC2086 # TORCH_BENCH_ARGS is a word list
  DISTCOMM_SHM=$shm LOCAL_WORLD_SIZE=$n PYTHONPATH="$pypath" "$launch" -n "$n" -- \
    "$py" "$here/torch_bench.py" ${TORCH_BENCH_ARGS:-} 2>&1 | grep -v -e 'register_backend' -e 'Device capability of distcomm' |
    tee "$out/torch-$link-$n.txt"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/torch-tcp-$n.txt"
