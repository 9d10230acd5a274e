#!/bin/bash
# coordinator.sh UNUSED CONFORMANCE HOSTS PER_HOST: a job started by hand, as a
# Slurm script would start it: a shell loop runs PER_HOST ranks in each of
# HOSTS namespace hosts with only the coordinator variables (no hostfile, no
# launcher), first with ours and MLX's names, then with torchrun's. Each
# rank must find its peers at its own host's address.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/checks.sh" "$1"
conf=$2 nh=$3 per=$4
n=$((nh * per))
hosts_up "$nh" || { fail "the test hosts did not come up"; finish; }
unset MLX_RANK MLX_HOSTFILE DISTCOMM_JOB_TOKEN MLX_WORLD_SIZE RANK WORLD_SIZE \
  MASTER_ADDR MASTER_PORT SLURM_PROCID SLURM_NTASKS DISTCOMM_COORDINATOR \
  MLX_JACCL_COORDINATOR OMPI_COMM_WORLD_RANK PMI_RANK PMIX_RANK DISTCOMM_IFNAME
# A job across hosts needs a token (protected mode): one file on the shared
# file system, as a scheduler's secret or a shared home gives every rank.
(umask 077 && printf 'coordinator-test-token-%s%s\n' "$RANDOM" "$RANDOM" >"$T/token")
export DISTCOMM_JOB_TOKEN_FILE=$T/token

# run NAME VARS_FN ARGS...: every rank in its host, the conformance suite
# with ARGS; VARS_FN R prints rank R's variables.
run() {
  local name=$1 vars=$2 r h pids=() bad=0
  shift 2
  for ((r = 0; r < n; r++)); do
    h=$((r / per + 1))
    # shellcheck disable=SC2046 # one word per variable
    hosts_exec "$h" env DISTCOMM_TIMEOUT=60 DISTCOMM_VERBOSE=1 $($vars "$r") \
      timeout -k 2 300 "$conf" --size "$n" "$@" >"$T/$name.$r" 2>&1 &
    pids+=($!)
  done
  for ((r = 0; r < n; r++)); do
    if ! wait "${pids[$r]}" || ! grep -q 'passed, 0 failed$' "$T/$name.$r"; then
      bad=1
      fail "$name: rank $r: $(grep -v '^\[distcomm' "$T/$name.$r" | tail -3)"
    fi
  done
  [ $bad -eq 0 ] && ok "$name: $n ranks on $nh hosts passed the conformance suite"
}

ours() { echo "DISTCOMM_COORDINATOR=10.99.0.1:29511 MLX_RANK=$1 MLX_WORLD_SIZE=$n"; }
jaccl() { echo "MLX_JACCL_COORDINATOR=10.99.0.1:29512 MLX_RANK=$1 MLX_WORLD_SIZE=$n"; }
torch() { echo "MASTER_ADDR=10.99.0.1 MASTER_PORT=29513 RANK=$1 WORLD_SIZE=$n DISTCOMM_SHM=0"; }
run ours ours --counts 0,1,7,65537
run jaccl jaccl --counts 0,1,7,4099
run torchrun torch --counts 0,1,7,4099
# Every rank listened on its own host's address (the one that routes to
# the coordinator): the last rank dialed each lower rank there.
last=$T/ours.$((n - 1))
for ((r = 0; r < n - 1; r++)); do
  h=$((r / per + 1))
  grep -q "connected to rank $r lane 0 at 10\.99\.0\.$h:" "$last" ||
    fail "rank $((n - 1)) did not reach rank $r at host $h's address: $(grep "connected to rank $r lane 0" "$last")"
done
finish
