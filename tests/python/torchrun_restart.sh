#!/bin/bash
# torch 2's torchrun --max-restarts 1 with the "distcomm" backend: a worker
# killed with SIGKILL mid-job; torchrun restarts the job, which resumes from
# its checkpoint and finishes (torchrun_restart_worker.py).
# usage: torchrun_restart.sh VENV_BIN
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset MLX_RANK MLX_HOSTFILE MLX_WORLD_SIZE DISTCOMM_COORDINATOR DISTCOMM_JOB_TOKEN
OMP_NUM_THREADS=1 DISTCOMM_TIMEOUT=30 timeout 300 "$bin/torchrun" --standalone \
  --nproc-per-node 2 --max-restarts 1 "$here/torchrun_restart_worker.py" \
  "$tmp/ckpt.pt" >"$tmp/out" 2>&1
rc=$?
grep -v '^frame #' "$tmp/out"
[ $rc -eq 0 ] || { echo "FAILED: torchrun exited with status $rc"; exit 1; }
for r in 0 1; do
  grep -q "^rank $r attempt 1: resumed at step 3$" "$tmp/out" &&
    grep -q "^rank $r attempt 1: done, w \[24.0, 24.0, 24.0, 24.0\]$" "$tmp/out" ||
    { echo "FAILED: rank $r did not resume at step 3 and finish"; exit 1; }
done
grep -q "PeerLostError\|rank 1" "$tmp/out" || { echo "FAILED: no word of the lost rank"; exit 1; }
echo "torchrun restarted the job after a killed worker; it resumed and finished"
