#!/bin/bash
# torch 2's torchrun with the "distcomm" backend, as a two-node job run on
# one host: two torchrun processes (--nnodes 2 --nproc-per-node 2, c10d
# rendezvous at 127.0.0.1:PORT), no hostfile and no distcomm variables; the
# four workers all_reduce and both torchruns exit 0.
# usage: torchrun_local.sh VENV_BIN
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
port=$("$bin/python" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset MLX_RANK MLX_HOSTFILE MLX_WORLD_SIZE DISTCOMM_COORDINATOR DISTCOMM_JOB_TOKEN
pids=()
for node in 0 1; do
  OMP_NUM_THREADS=1 DISTCOMM_TIMEOUT=60 timeout 240 "$bin/torchrun" --nnodes 2 \
    --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint "127.0.0.1:$port" \
    --rdzv-id "dc-$$" --max-restarts 0 "$here/torchrun_worker.py" >"$tmp/$node" 2>&1 &
  pids+=($!)
done
rc=0
for node in 0 1; do
  wait "${pids[$node]}" || { echo "torchrun of node $node exited with status $?"; rc=1; }
done
cat "$tmp/0" "$tmp/1" | grep -v '^frame #'
for r in 0 1 2 3; do
  if ! cat "$tmp/0" "$tmp/1" | grep -q "^rank $r of 4 local $((r % 2)) \[10.0, 10.0, 10.0, 10.0\]$"; then
    echo "FAILED: worker $r did not all_reduce"
    rc=1
  fi
done
[ $rc -eq 0 ] && echo "torchrun: 4 workers on 2 nodes ran on distcomm"
exit $rc
