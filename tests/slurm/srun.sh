#!/bin/bash
# srun.sh STATE CONFORMANCE [MPI]: the conformance suite under srun on the
# test cluster's 3 hosts x 2 ranks, with nothing set but the job token file
# (as on a shared home), shared memory inside each host, TCP across.
# Plain (no MPI): rank 0's coordinator on the step's first host at the port
# from the job and step ids, and a multi-host step without a token fails at
# once, naming the hosts. MPI = pmix (or pmi2...): srun --mpi=MPI, Slurm's
# PMI server in each slurmd; the start each rank took is printed, and
# checked against $start_want when it is set.
set -u
. "$(dirname "$0")/case.sh"
conf=$2 mode=${3:-plain}
mpi=()
[ "$mode" = plain ] || mpi=(--mpi="$mode")
# The start the ranks must log (a pattern of their "... ready by ..." line)
# under srun --mpi=MPI: Slurm's PMIx server means distcomm's PMIx start
# (src/bootstrap/pmix.c), not the first-host coordinator.
start_want=
[ "$mode" = pmix ] && start_want=PMIx
if [ "$mode" = pmix ]; then
    # Slurm's PMIx server gave each task its rank: the plugin is there and runs
    cl_login timeout 60 srun "${mpi[@]}" -N 3 -n 6 -l sh -c 'echo "pmix rank ${PMIX_RANK:-none}"' \
        </dev/null >"$T/env" 2>&1
    [ "$(grep -c 'pmix rank [0-5]$' "$T/env")" -eq 6 ] && ok "srun --mpi=pmix gave 6 tasks a PMIX_RANK" ||
        fail "srun --mpi=pmix: $(head -5 "$T/env")"
fi
start=$(date +%s)
cl_login timeout -k 5 300 env DISTCOMM_JOB_TOKEN_FILE="$CL_TOKEN" DISTCOMM_VERBOSE=1 DISTCOMM_TIMEOUT=60 \
    srun "${mpi[@]}" -N 3 -n 6 -l sh -c '[ "$SLURM_PROCID" != 0 ] || echo "step $SLURM_JOB_ID.$SLURM_STEP_ID"
        exec "$0" "$@"' "$conf" --size 6 --quick </dev/null >"$T/out" 2>&1
rc=$?
echo "srun ${mpi[*]} -N 3 -n 6: exit $rc in $(($(date +%s) - start)) s"
[ $rc -eq 0 ] && ok "srun exited 0" || fail "srun exited $rc: $(grep -i -E 'fail|error' "$T/out" | head -5)"
good=$(grep -c 'passed, 0 failed$' "$T/out")
[ "$good" -eq 6 ] && ok "6 ranks on 3 hosts passed" || fail "$good of 6 ranks passed"
# How each rank started.
echo "start used: $(sed -n 's/.*\] \(.* ready by [^:(]*\).*(\(.*\)): rank.*/\1 (\2)/p' "$T/out" | sort | uniq -c | tr -s ' \n' ' ')"
ready=$(grep -c '\] .* ready by .*: rank [0-5] of 6' "$T/out")
[ "$ready" -eq 6 ] && ok "every rank logged how it started" || fail "$ready of 6 ranks logged a start"
if [ "$mode" != plain ] && [ -n "$start_want" ]; then
    n=$(grep -c "\] .*ready by .*$start_want" "$T/out")
    [ "$n" -eq 6 ] && ok "6 ranks started by $start_want" || fail "$n of 6 ranks started by $start_want"
fi
if [ "$mode" = plain ]; then
    coord=$(grep -o 'ready by coordinator dcsl1:[0-9]* (SLURM_STEP_NODELIST/SLURM_JOB_ID)' "$T/out" | sort -u)
    [ "$(grep -c . <<<"$coord")" -eq 1 ] && [ "$(grep -c 'by coordinator dcsl1:' "$T/out")" -eq 6 ] &&
        ok "all 6 ranks met at one coordinator on the first host: $coord" ||
        fail "coordinator lines: $(grep 'ready by' "$T/out" | head -3)"
    read -r job step < <(sed -n 's/^0: step \([0-9]*\)\.\([0-9]*\)$/\1 \2/p' "$T/out")
    port=$((20000 + (${job:-0} * 64 + ${step:-0}) % 10000))
    grep -q "coordinator dcsl1:$port " <<<"$coord" &&
        ok "its port is 20000 + (job $job x 64 + step $step) mod 10000 = $port" ||
        fail "job '$job' step '$step': port $port expected"
fi
# 6 lines from the world group, 6 more from the hierarchy's host groups
shm=$(grep -c "shared memory with 1 same-host peer" "$T/out")
[ "$shm" -eq 6 ] || [ "$shm" -eq 12 ] && ok "shared memory with the same-host peer on every rank" ||
    fail "$shm lines of shared memory with the same-host peer (6 or 12 expected)"
expect_none_left 10 "$conf"
if [ "$mode" = plain ]; then
    # Across hosts without a token: refused at once, naming the step's hosts.
    start=$(date +%s)
    cl_login timeout -k 5 60 env -u DISTCOMM_JOB_TOKEN_FILE -u DISTCOMM_JOB_TOKEN -u DISTCOMM_INSECURE \
        srun -N 3 -n 3 -l "$conf" --size 3 --quick </dev/null >"$T/notoken" 2>&1
    rc=$? took=$(($(date +%s) - start))
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && ok "without a token srun exited $rc in $took s" ||
        fail "without a token srun exited $rc in $took s"
    n=$(grep -c 'srun started this job on 3 hosts (SLURM_STEP_NODELIST=dcsl\[1-3\]) but it has no DISTCOMM_JOB_TOKEN' "$T/notoken")
    [ "$n" -eq 3 ] && ok "each of the 3 ranks names the hosts and the missing token" ||
        fail "$n of 3 ranks named the missing token: $(head -3 "$T/notoken")"
    [ $took -lt 30 ] && ok "refused within 30 s" || fail "took $took s to refuse"
fi
finish
