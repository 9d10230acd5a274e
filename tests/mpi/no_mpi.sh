#!/bin/bash
# no_mpi.sh PROBE: the MPI backend where MPI cannot be used, without mpirun.
# The launcher's variables are faked (PMI_RANK/PMI_SIZE as MPICH's hydra
# sets them), so the backend believes it was launched and must then fail
# cleanly: strict init names the reason, "any" falls back to a singleton.
set -u
probe=${1:?usage: no_mpi.sh PROBE}
fails=0
unset MLX_RANK MLX_HOSTFILE OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMIX_RANK SLURM_PROCID \
  SLURM_NTASKS WORLD_SIZE MLX_WORLD_SIZE PET_NNODES DISTCOMM_BACKEND

# expect NAME PATTERN ENV... -- ARGS: the probe's output must match PATTERN.
expect() {
  local name=$1 pattern=$2 out
  shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  out=$(timeout -k 5 30 env "${envs[@]}" "$probe" init "$@" 2>&1)
  if echo "$out" | grep -qE -- "$pattern"; then
    echo "ok: $name"
  else
    echo "FAIL: $name: expected /$pattern/, got: $out"
    fails=$((fails + 1))
  fi
}

fake=(PMI_RANK=0 PMI_SIZE=2)
# No MPI installed (as far as the backend can tell): the library is missing.
expect "no MPI, strict" \
  '^ERR ERR_UNAVAILABLE: mpi: cannot use MLX_MPI_LIBNAME=libdoesnotexist\.so: libdoesnotexist\.so: cannot open shared object file' \
  "${fake[@]}" MLX_MPI_LIBNAME=libdoesnotexist.so -- --strict --backend mpi
# A launcher announced 2 processes: a group of one would be wrong (issue
# 36), so "any" fails naming the size and why MPI could not start.
expect "no MPI, any fails naming PMI_SIZE and the library" \
  '^ERR ERR_CONFIG: init: PMI_SIZE=2 asks for more than one process, .*MLX_MPI_LIBNAME=libdoesnotexist\.so' \
  "${fake[@]}" MLX_MPI_LIBNAME=libdoesnotexist.so -- --backend any
expect "no MPI, strict any names the ring and MPI" \
  '^ERR ERR_CONFIG: .*no coordinator.*MLX_MPI_LIBNAME=libdoesnotexist\.so' \
  "${fake[@]}" MLX_MPI_LIBNAME=libdoesnotexist.so -- --strict --backend any
# The launcher said one process: the group of one is right.
expect "no MPI, a world of one is a singleton" \
  '^OK rank 0 size 1 backend singleton' \
  PMI_RANK=0 PMI_SIZE=1 MLX_MPI_LIBNAME=libdoesnotexist.so -- --backend any
# A library that exists but is not MPI.
expect "wrong MLX_MPI_LIBNAME (libm)" \
  '^ERR ERR_UNAVAILABLE: mpi: cannot use MLX_MPI_LIBNAME=libm\.so\.6: libm\.so\.6: it has no MPI_Init_thread \(not an MPI library\?\)' \
  "${fake[@]}" MLX_MPI_LIBNAME=libm.so.6 -- --strict --backend mpi
# Failing init twice gives the same answer (nothing half set up).
expect "wrong MLX_MPI_LIBNAME, retried" \
  '^ERR ERR_UNAVAILABLE: mpi: cannot use MLX_MPI_LIBNAME=libm\.so\.6' \
  "${fake[@]}" MLX_MPI_LIBNAME=libm.so.6 -- --strict --backend mpi --retry
# Not started by any launcher.
expect "no launcher" \
  '^ERR ERR_UNAVAILABLE: mpi: not started by an MPI launcher' \
  -- --strict --backend mpi
# A launcher that started one process: nothing to connect, MPI not loaded.
expect "world of one" \
  '^ERR ERR_UNAVAILABLE: mpi: .* started a world of 1 process' \
  PMI_RANK=0 PMI_SIZE=1 MLX_MPI_LIBNAME=libdoesnotexist.so -- --strict --backend mpi

[ $fails -eq 0 ] && echo "PASS: no_mpi" || exit 1
