#!/bin/bash
# pmix.sh conformance NP CONFORMANCE [ARG...] | errors PROBE | twice NP PROG
# The PMIx bootstrap (src/bootstrap/pmix.c) under Open MPI's mpirun, a PMIx
# server (Debian's openmpi-bin through libpmix2), with nothing set by the user:
#   conformance  NP ranks of the conformance suite with "any": all pass, and
#                each says (DISTCOMM_VERBOSE) that its ring came up by PMIx
#                with the job token proven.
#   errors       a killed rank ends the job with distcomm's error naming it;
#                libpmix missing is one clear line; DISTCOMM_BACKEND=mpi
#                still takes MPI; stale PMIx variables without a server fail
#                at once naming PMIx_Init; none of it hangs.
# Exits 77 (ctest: skipped) when mpirun.openmpi is not installed.
set -u
mode=$1
. "$(dirname "$0")/../mp/mp_lib.sh"
mpirun=$(command -v mpirun.openmpi) || { echo "SKIP: mpirun.openmpi (Open MPI) is not installed"; exit 77; }
# Only what mpirun gives may start the job: no variables of other starts.
unset MLX_RANK MLX_HOSTFILE MLX_MPI_LIBNAME DISTCOMM_BACKEND DISTCOMM_COORDINATOR \
  MASTER_ADDR PET_NNODES SLURM_PROCID SLURM_NTASKS SLURM_STEP_NODELIST \
  DISTCOMM_JOB_TOKEN DISTCOMM_JOB_TOKEN_FILE WORLD_SIZE MLX_WORLD_SIZE
run() { # run SECONDS NP ARGS...: mpirun as root on 2 cores, output in $mp_tmp/out
  local secs=$1 np=$2
  shift 2
  timeout -k 10 "$secs" "$mpirun" --allow-run-as-root --oversubscribe -np "$np" "$@" \
    >"$mp_tmp/out" 2>&1
}
out() { cat "$mp_tmp/out"; }

conformance() {
  local np=$1 conf=$2 rc passed ready proven
  shift 2
  DISTCOMM_VERBOSE=1 run 300 "$np" "$conf" --size "$np" "$@"
  rc=$?
  passed=$(grep -c "checks passed, 0 failed" "$mp_tmp/out")
  ready=$(grep -c "ring ready by PMIx (namespace [^)]*): rank [0-9]* of $np," "$mp_tmp/out")
  proven=$(grep -c "(job token proven)" "$mp_tmp/out")
  if [ $rc -ne 0 ]; then
    fail "mpirun -np $np exited with $rc: $(grep -v '^\[distcomm' "$mp_tmp/out" | tail -20)"
  elif [ "$passed" -ne "$np" ] || [ "$ready" -ne "$np" ]; then
    fail "$passed of $np ranks passed, $ready came up by PMIx: $(grep -v 'connected\|accepted' "$mp_tmp/out")"
  elif [ "$proven" -lt 1 ]; then
    fail "no connection proved a job token: $(grep 'accepted' "$mp_tmp/out" | head -3)"
  else
    ok "$np ranks passed on distcomm's ring started by PMIx ($proven connections proved rank 0's token)"
  fi
}

# expect NAME PATTERN: the last run's output must match PATTERN (grep -E).
expect() {
  if grep -qE -- "$2" "$mp_tmp/out"; then ok "$1"; else fail "$1: expected /$2/, got: $(out)"; fi
}

errors() {
  local probe=$1 t0 dt rc
  # Rank 1 of 3 SIGKILLs itself inside a 16 MiB all_sum: the others fail at
  # once with distcomm's error naming rank 1, and mpirun ends the job. The
  # ranks ignore SIGTERM (inherited through exec), which mpirun sends first
  # when it stops a job: on a loaded machine it could otherwise stop them
  # before they print; its SIGKILL still ends them.
  t0=$(now_ms)
  DISTCOMM_TIMEOUT=30 run 90 3 sh -c 'trap "" TERM; exec "$0" "$@"' "$probe" \
    loop 16 1000000 --die 1:300 --linger 5
  rc=$? dt=$(($(now_ms) - t0))
  if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
    fail "killed rank: mpirun exit $rc, want a failure: $(out)"
  else
    expect "killed rank: distcomm's error names rank 1 ($dt ms)" \
      '^rank [02]: ERR ERR_PEER_LOST at [0-9.]*: all_sum: rank 1 \(.*\) closed the connection'
  fi
  [ "$(grep -c 'ready pid' "$mp_tmp/out")" -eq 3 ] || fail "killed rank: not all 3 ranks started: $(out)"

  # libpmix cannot be loaded: "any" fails naming the library and the way out.
  DISTCOMM_PMIX_LIBNAME=libdoesnotexist.so run 60 2 "$probe" init
  expect "libpmix missing: one clear line" \
    '^ERR ERR_CONFIG: init: a PMIx server started this process, but libdoesnotexist\.so cannot be loaded \(.*\): install Debian.s libpmix2, or set DISTCOMM_BACKEND=mpi to use the MPI library instead \(OMPI_COMM_WORLD_SIZE=2 asks for more than one process, and PMIx was the way to reach the others\)$'
  # ... and asked for by name, it is unavailable with the same reason.
  DISTCOMM_PMIX_LIBNAME=libdoesnotexist.so run 60 1 "$probe" init --strict --backend pmix
  expect "libpmix missing, strict pmix" '^ERR ERR_UNAVAILABLE: init: a PMIx server started this process, but libdoesnotexist\.so'

  # A library that is not libpmix.
  DISTCOMM_PMIX_LIBNAME=libm.so.6 run 60 1 "$probe" init --strict --backend pmix
  expect "DISTCOMM_PMIX_LIBNAME=libm.so.6" '^ERR ERR_UNAVAILABLE: init: a PMIx server started this process, but libm\.so\.6 has no PMIx_Init \(not libpmix\?\)'

  # MPI by name under the same mpirun: the MPI backend, as before.
  DISTCOMM_BACKEND=mpi run 60 2 "$probe" init
  expect "DISTCOMM_BACKEND=mpi takes MPI under mpirun" '^OK rank 1 size 2 backend mpi'
  expect "DISTCOMM_BACKEND=mpi: rank 0 too" '^OK rank 0 size 2 backend mpi'
  # "any" without it: distcomm's ring.
  run 60 2 "$probe" init
  expect "\"any\" under mpirun is the ring" '^OK rank 1 size 2 backend ring'

  # A rank that never reaches the exchange: the fence ends by DISTCOMM_TIMEOUT
  # (3 s here) with a line naming it, not after mpirun's own patience.
  t0=$(now_ms)
  DISTCOMM_TIMEOUT=3 run 60 1 "$probe" init : -np 1 sleep 15
  dt=$(($(now_ms) - t0))
  expect "a rank that never comes: the fence's timeout ($dt ms)" \
    '^ERR ERR_TIMEOUT: init: PMIx \(namespace [^,]*, rank 0\): PMIx_Fence (failed: TIMEOUT|did not return within 3 s) \(DISTCOMM_TIMEOUT\): is every rank of the job running\?'
  [ "$dt" -lt 12000 ] || fail "the fence's timeout took $dt ms (DISTCOMM_TIMEOUT=3)"

  # PMIx variables left over, no server behind them: PMIx_Init fails at once.
  t0=$(now_ms)
  PMIX_NAMESPACE=gone PMIX_RANK=0 OMPI_COMM_WORLD_SIZE=2 timeout -k 5 60 "$probe" init >"$mp_tmp/out" 2>&1
  dt=$(($(now_ms) - t0))
  expect "stale PMIx variables: PMIx_Init's error ($dt ms)" \
    '^ERR ERR_SYSTEM: init: PMIx \(namespace gone, rank 0\): PMIx_Init failed: '
  [ "$dt" -lt 20000 ] || fail "stale PMIx variables took $dt ms"
  # srun --mpi=pmix sets Slurm's variables too: PMIx comes before the
  # coordinator on the step's first host (which would wait for rank 1).
  PMIX_NAMESPACE=gone PMIX_RANK=0 SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_STEP_NODELIST=localhost \
    SLURM_JOB_ID=5 DISTCOMM_TIMEOUT=5 DISTCOMM_INSECURE=1 timeout -k 5 60 "$probe" init >"$mp_tmp/out" 2>&1
  expect "srun --mpi=pmix: PMIx before Slurm's first host" '^ERR ERR_SYSTEM: init: PMIx \(namespace gone, rank 0\): PMIx_Init failed: '

  # No PMIx server at all: "pmix" by name says so; "any" is a group of one.
  timeout -k 5 60 "$probe" init --strict --backend pmix >"$mp_tmp/out" 2>&1
  expect "no PMIx server, strict pmix" '^ERR ERR_UNAVAILABLE: init: no PMIx server \(PMIX_NAMESPACE and PMIX_RANK are unset\)'
  timeout -k 5 60 "$probe" init >"$mp_tmp/out" 2>&1
  expect "no PMIx server, any: a group of one" '^OK rank 0 size 1 backend singleton'
}

# NP ranks each make, use and free the world twice (tests/mpi/pmix_twice.c).
twice() {
  local np=$1 prog=$2 rc rounds
  run 90 "$np" "$prog"
  rc=$?
  rounds=$(grep -c "^rank [0-9]*/$np: round [01] sum $np backend ring$" "$mp_tmp/out")
  if [ $rc -eq 0 ] && [ "$rounds" -eq $((2 * np)) ]; then
    ok "$np ranks made the world twice through PMIx"
  else
    fail "mpirun exit $rc, $rounds of $((2 * np)) rounds right: $(out)"
  fi
}

case $mode in
  conformance) shift; conformance "$@" ;;
  errors) errors "$2" ;;
  twice) twice "$2" "$3" ;;
  *) echo "pmix.sh: unknown mode '$mode'" >&2; exit 2 ;;
esac
mp_finish
