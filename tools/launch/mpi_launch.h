/* --backend mpi: run the command under mpirun (mpi_launch.c). */
#ifndef DCL_MPI_LAUNCH_H
#define DCL_MPI_LAUNCH_H

#include "options.h"

/* Runs command under mpirun (DISTCOMM_MPIRUN, default "mpirun") with the
 * hosts, --env, --cwd, --tag-output and --mpi-arg of o; returns mpirun's exit
 * status (128+signal when killed), 127 when mpirun cannot be run, 2 when the
 * hosts are unusable. Signal handlers must be installed. */
int dcl_mpi_launch(const struct dcl_options *o, char **command);

#endif
