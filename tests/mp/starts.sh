#!/bin/bash
# starts.sh PROBE CONFORMANCE: ranks started by hand with exactly the
# variables a scheduler sets (issue 36): plain srun (no PMI: SLURM_PROCID,
# SLURM_NTASKS, SLURM_STEP_NODELIST, SLURM_JOB_ID, SLURM_STEP_ID), the
# Kubernetes training operators' PET_* names and an Indexed Job's
# JOB_COMPLETION_INDEX. Each start completes the conformance all_sums (or a
# barrier); each wrong or missing combination fails at once (< 3 s) with
# one line naming the variables, never a group of one, never MPI.
set -u
probe=$1 conf=$2
. "$(dirname "$0")/mp_lib.sh"
unset MLX_RANK MLX_HOSTFILE DISTCOMM_JOB_TOKEN DISTCOMM_JOB_TOKEN_FILE \
  MLX_WORLD_SIZE RANK WORLD_SIZE LOCAL_RANK MASTER_ADDR MASTER_PORT \
  SLURM_PROCID SLURM_NTASKS SLURM_LOCALID SLURM_STEP_NODELIST SLURM_JOB_ID \
  SLURM_STEP_ID DISTCOMM_COORDINATOR MLX_JACCL_COORDINATOR \
  OMPI_COMM_WORLD_RANK PMI_RANK PMIX_RANK DISTCOMM_IFNAME DISTCOMM_BACKEND \
  PET_NNODES PET_NPROC_PER_NODE PET_NODE_RANK PET_MASTER_ADDR \
  PET_MASTER_PORT JOB_COMPLETION_INDEX DISTCOMM_INSECURE
export DISTCOMM_TIMEOUT=20
. "$(dirname "$0")/by_hand.sh"
counts=0,1,7,4099

# A job id whose port (20000 + (job x 64 + step) mod 10000, the documented
# formula) is random, so parallel runs rarely collide.
job=$((RANDOM * 7 + 1000))
slurm_port=$((20000 + (job * 64 + 0) % 10000))

# sized NAME N: each rank's probe said it is rank r of N on the ring.
sized() {
  local r
  for ((r = 0; r < $2; r++)); do
    grep -q "^OK rank $r size $2 backend ring" "$mp_tmp/$1.$r" ||
      fail "$1 rank $r: not rank $r of $2 on the ring: $(cat "$mp_tmp/$1.$r")"
  done
}

# 3 ranks as plain srun starts them on one host (protected mode: no token).
for r in 0 1 2; do
  start srun $r SLURM_PROCID=$r SLURM_NTASKS=3 SLURM_LOCALID=$r \
    SLURM_STEP_NODELIST=localhost SLURM_JOB_ID=$job SLURM_STEP_ID=0 \
    DISTCOMM_VERBOSE=1 -- "$conf" --size 3 --counts $counts
done
expect_ok srun 3 "plain srun's variables, 3 ranks: conformance"
if grep -q "ring ready by coordinator localhost:$slurm_port (SLURM_STEP_NODELIST" "$mp_tmp/srun.0"; then
  ok "the coordinator at the formula's port $slurm_port"
else
  fail "not at port $slurm_port: $(grep 'ring ready' "$mp_tmp/srun.0")"
fi

# Several hosts in a compressed list need a token (here a file); the
# coordinator is the list's first host.
umask 077
printf "starts-%05d%05d-token\n" $RANDOM $RANDOM >"$mp_tmp/token" # 23 characters
for r in 0 1; do
  start srun2 $r SLURM_PROCID=$r SLURM_NTASKS=2 SLURM_STEP_NODELIST='localhost,n[01-02]' \
    SLURM_JOB_ID=$((job + 1)) SLURM_STEP_ID=3 \
    DISTCOMM_JOB_TOKEN_FILE="$mp_tmp/token" -- "$probe" init
done
expect_ok srun2 2 "srun on a 3-host list with DISTCOMM_JOB_TOKEN_FILE"
sized srun2 2

# Kubeflow Trainer v2: 2 nodes x 2 processes, rank = node x 2 + LOCAL_RANK.
p=$(($(mp_port_base) + 1))
for n in 0 1; do
  for l in 0 1; do
    start pet $((n * 2 + l)) PET_NNODES=2 PET_NPROC_PER_NODE=2 PET_NODE_RANK=$n \
      LOCAL_RANK=$l PET_MASTER_ADDR=127.0.0.1 PET_MASTER_PORT=$p \
      -- "$conf" --size 4 --counts $counts
  done
done
expect_ok pet 4 "PET_NNODES=2 PET_NPROC_PER_NODE=2 PET_NODE_RANK LOCAL_RANK PET_MASTER_*: conformance"

# An Indexed Job: the pod's JOB_COMPLETION_INDEX is its node rank.
p=$(($(mp_port_base) + 2))
for i in 0 1 2; do
  start indexed $i PET_NNODES=3 JOB_COMPLETION_INDEX=$i \
    PET_MASTER_ADDR=localhost PET_MASTER_PORT=$p -- "$probe" init
done
expect_ok indexed 3 "PET_NNODES=3 + JOB_COMPLETION_INDEX + PET_MASTER_*"
sized indexed 3

# expect NAME WORDS -- ENV...: "probe init" with exactly ENV exits 3 within
# 3 s with one "ERR ERR_CONFIG" line holding every word of WORDS ("|").
expect() {
  local name=$1 words=$2 t0 out rc dt w list
  shift 3
  t0=$(now_ms)
  out=$(env "$@" timeout -k 2 10 "$probe" init 2>&1)
  rc=$?
  dt=$(($(now_ms) - t0))
  IFS='|' read -r -a list <<<"$words"
  if [ "$rc" -ne 3 ] || [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ] ||
    ! contains "$out" "ERR ERR_CONFIG:" "${list[@]}"; then
    fail "$name: exit $rc, want 3 and one ERR_CONFIG line naming ${list[*]}: $out"
  elif [ "$dt" -ge 3000 ]; then
    fail "$name: took $dt ms: $out"
  else
    ok "$name ($dt ms): $out"
  fi
}

S="SLURM_JOB_ID=$job SLURM_STEP_ID=0"
expect "srun, no nodelist (was: MPI's abort or a group of one)" \
  "SLURM_NTASKS=2|SLURM_STEP_NODELIST|srun" -- SLURM_PROCID=1 SLURM_NTASKS=2 $S
# An sbatch script's own process (SLURM_PROCID=0, the job's SLURM_NTASKS,
# no step): one process, a group of one, and a word on srun.
out=$(env SLURM_PROCID=0 SLURM_NTASKS=4 SLURM_JOB_ID=$job timeout 10 "$probe" init 2>&1)
if contains "$out" "OK rank 0 size 1 backend singleton" \
  "SLURM_NTASKS=4 but no SLURM_STEP_NODELIST" "start the ranks with srun"; then
  ok "a batch script's own process: $out"
else fail "a batch script's own process: $out"; fi
expect "srun, a malformed nodelist" "SLURM_STEP_NODELIST|n[1-|unbalanced" -- \
  SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_STEP_NODELIST='n[1-' $S
expect "srun, several hosts and no token" \
  "3 hosts|SLURM_STEP_NODELIST=n[1-3]|DISTCOMM_JOB_TOKEN_FILE" -- \
  SLURM_PROCID=0 SLURM_NTASKS=3 SLURM_STEP_NODELIST='n[1-3]' $S
expect "srun, no job id" "SLURM_JOB_ID|DISTCOMM_COORDINATOR" -- \
  SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_STEP_NODELIST=localhost
expect "torchrun's rank and size, no address (was: a group of one)" \
  "WORLD_SIZE=2|MASTER_ADDR|MASTER_PORT" -- RANK=1 WORLD_SIZE=2
M="PET_MASTER_ADDR=127.0.0.1 PET_MASTER_PORT=$slurm_port"
expect "operator, no address" "PET_NNODES=2|PET_MASTER_ADDR|PET_MASTER_PORT" -- \
  PET_NNODES=2 PET_NODE_RANK=1
expect "operator, half an address" "PET_MASTER_ADDR|PET_MASTER_PORT" -- \
  PET_NNODES=2 PET_NODE_RANK=1 PET_MASTER_ADDR=127.0.0.1
expect "operator, no node rank" "PET_NNODES=2|PET_NODE_RANK|JOB_COMPLETION_INDEX" -- \
  PET_NNODES=2 $M
expect "operator, no LOCAL_RANK" "PET_NPROC_PER_NODE=2|LOCAL_RANK" -- \
  PET_NNODES=2 PET_NPROC_PER_NODE=2 PET_NODE_RANK=0 $M
expect "operator, elastic node count" "PET_NNODES='1:4'|elastic" -- \
  PET_NNODES=1:4 PET_NODE_RANK=0 $M
expect "operator, node rank out of range" "PET_NODE_RANK=2|PET_NNODES=2" -- \
  PET_NNODES=2 PET_NODE_RANK=2 $M
expect "operator, LOCAL_RANK out of range" "LOCAL_RANK=2|PET_NPROC_PER_NODE=2" -- \
  PET_NNODES=1 PET_NPROC_PER_NODE=2 PET_NODE_RANK=0 LOCAL_RANK=2 $M

# DISTCOMM_BACKEND=mpi: "any" means MPI even under srun (here a missing
# library, so MPI's own error shows it was taken).
out=$(env DISTCOMM_BACKEND=mpi SLURM_PROCID=0 SLURM_NTASKS=2 $S \
  SLURM_STEP_NODELIST=localhost MLX_MPI_LIBNAME=libdoesnotexist.so \
  timeout 10 "$probe" init --strict 2>&1)
if contains "$out" "ERR ERR_UNAVAILABLE: mpi: cannot use MLX_MPI_LIBNAME=libdoesnotexist.so"; then
  ok "DISTCOMM_BACKEND=mpi takes MPI: $out"
else fail "DISTCOMM_BACKEND=mpi: $out"; fi

# A world of one is still a group of one.
out=$(env RANK=0 WORLD_SIZE=1 timeout 10 "$probe" init 2>&1)
if [ "$out" = "OK rank 0 size 1 backend singleton" ]; then ok "WORLD_SIZE=1: $out"
else fail "WORLD_SIZE=1: $out"; fi
mp_finish
