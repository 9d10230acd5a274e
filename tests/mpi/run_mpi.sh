#!/bin/bash
# run_mpi.sh IMPL NP SECONDS PROGRAM [ARG...]
# Runs PROGRAM on NP ranks under the mpirun of IMPL (ompi: Open MPI's
# mpirun.openmpi, mpich: MPICH's mpirun.mpich), within SECONDS, and checks
# that every rank printed "... 0 failed". Exits 77 (ctest: skipped) when that
# mpirun is not installed. Extra environment for the ranks (e.g.
# DISTCOMM_MPI_PIECE) is inherited: both launchers pass it to local ranks.
set -u
impl=$1 np=$2 secs=$3
shift 3
case $impl in
  ompi)
    mpirun=$(command -v mpirun.openmpi) || { echo "SKIP: mpirun.openmpi (Open MPI) is not installed"; exit 77; }
    # As root Open MPI refuses to start without these; --oversubscribe
    # lets NP exceed the cores.
    args=(--allow-run-as-root --oversubscribe -np "$np")
    ;;
  mpich)
    mpirun=$(command -v mpirun.mpich) || { echo "SKIP: mpirun.mpich (MPICH) is not installed"; exit 77; }
    args=(-np "$np")
    ;;
  *) echo "run_mpi.sh: unknown MPI '$impl'" >&2; exit 2 ;;
esac
# The ring's variables would make "any" choose the ring instead of MPI, and
# under Open MPI's PMIx server "any" is distcomm's transport (tests/mpi/
# pmix.sh): these tests are the MPI backend's, so they ask for it by name.
unset MLX_RANK MLX_HOSTFILE MLX_MPI_LIBNAME
export DISTCOMM_BACKEND=mpi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "+ $mpirun ${args[*]} $*"
timeout -k 10 "$secs" "$mpirun" "${args[@]}" "$@" >"$out" 2>&1
rc=$?
cat "$out"
[ $rc -eq 124 ] && { echo "FAIL: timed out after $secs s"; exit 1; }
[ $rc -eq 0 ] || { echo "FAIL: $impl mpirun exited with $rc"; exit 1; }
ok=$(grep -c "checks passed, 0 failed" "$out")
[ "$ok" -eq "$np" ] || { echo "FAIL: $ok of $np ranks reported success"; exit 1; }
echo "PASS: $np ranks under $impl"
