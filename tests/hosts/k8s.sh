#!/bin/bash
# k8s.sh UNUSED CONFORMANCE: 2 namespace hosts x 2 ranks started by hand
# with only the variables Kubernetes training operators set (issue 36),
# each host standing for a pod: Kubeflow Trainer's PET_NNODES,
# PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR/PET_MASTER_PORT and
# LOCAL_RANK, then an Indexed Job's JOB_COMPLETION_INDEX in place of
# PET_NODE_RANK; the job token from a file, as a mounted Secret gives it.
# Each passes the conformance suite. Without a token every rank fails at
# once (not after the timeout), naming PET_NNODES and the token variables.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/checks.sh" "$1"
conf=$2
hosts_up 2 || { fail "the test hosts did not come up"; finish; }
unset MLX_RANK MLX_HOSTFILE DISTCOMM_JOB_TOKEN DISTCOMM_JOB_TOKEN_FILE MLX_WORLD_SIZE \
  RANK WORLD_SIZE LOCAL_RANK MASTER_ADDR MASTER_PORT SLURM_PROCID SLURM_NTASKS \
  DISTCOMM_COORDINATOR MLX_JACCL_COORDINATOR OMPI_COMM_WORLD_RANK PMI_RANK \
  PMIX_RANK DISTCOMM_IFNAME PET_NNODES PET_NPROC_PER_NODE PET_NODE_RANK \
  PET_MASTER_ADDR PET_MASTER_PORT JOB_COMPLETION_INDEX DISTCOMM_INSECURE
(umask 077 && printf 'k8s-test-token-%s%s\n' "$RANDOM" "$RANDOM" >"$T/token")
common="PET_NNODES=2 PET_NPROC_PER_NODE=2 PET_MASTER_ADDR=10.99.0.1"

# run NAME VARS_FN: 4 ranks, rank r in host r/2+1; VARS_FN NODE LOCAL prints
# its variables. Sets the seconds the slowest rank took in $took.
run() {
  local name=$1 vars=$2 r pids=() t0=$SECONDS
  for ((r = 0; r < 4; r++)); do
    # shellcheck disable=SC2046 # one word per variable
    hosts_exec $((r / 2 + 1)) env DISTCOMM_TIMEOUT=30 $($vars $((r / 2)) $((r % 2))) \
      timeout -k 2 100 "$conf" --size 4 --counts 0,1,7,65537 >"$T/$name.$r" 2>&1 &
    pids+=($!)
  done
  for ((r = 0; r < 4; r++)); do
    wait "${pids[$r]}"
    echo $? >"$T/$name.$r.rc"
  done
  took=$((SECONDS - t0))
}

passed() { # NAME WHAT
  local r bad=0
  for ((r = 0; r < 4; r++)); do
    if [ "$(cat "$T/$1.$r.rc")" != 0 ] || ! grep -q 'passed, 0 failed$' "$T/$1.$r"; then
      bad=1
      fail "$1: rank $r: $(tail -3 "$T/$1.$r")"
    fi
  done
  [ $bad -eq 0 ] && ok "$2: 4 ranks on 2 hosts passed the conformance suite"
}

trainer() { echo "$common PET_MASTER_PORT=29541 PET_NODE_RANK=$1 LOCAL_RANK=$2 DISTCOMM_JOB_TOKEN_FILE=$T/token"; }
run trainer trainer
passed trainer "Kubeflow Trainer's PET_* and LOCAL_RANK"

indexed() { echo "$common PET_MASTER_PORT=29542 JOB_COMPLETION_INDEX=$1 LOCAL_RANK=$2 DISTCOMM_JOB_TOKEN_FILE=$T/token"; }
run indexed indexed
passed indexed "an Indexed Job's JOB_COMPLETION_INDEX"

notoken() { echo "$common PET_MASTER_PORT=29543 PET_NODE_RANK=$1 LOCAL_RANK=$2"; }
run notoken notoken
for ((r = 0; r < 4; r++)); do
  [ "$(cat "$T/notoken.$r.rc")" != 0 ] && grep -q "PET_NNODES=2: the job spans 2 nodes (pods) but has no DISTCOMM_JOB_TOKEN.*DISTCOMM_JOB_TOKEN_FILE" "$T/notoken.$r" ||
    fail "no token: rank $r did not fail naming PET_NNODES and the token: $(tail -2 "$T/notoken.$r")"
done
# DISTCOMM_TIMEOUT is 30 s: failing at once is well under it
[ "$took" -lt 15 ] && ok "no token: every rank failed at once (${took} s), naming the token variables" ||
  fail "no token: the ranks took ${took} s to fail (rank 0 waited for the refused ones?)"
expect_none_left 5
finish
