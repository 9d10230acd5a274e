/* The MPI backend's shared pieces: mpi.c (the ops) and mpi_init.c (the
 * world, split, free and MPI's life cycle). */
#ifndef DC_BACKENDS_MPI_BACKEND_H
#define DC_BACKENDS_MPI_BACKEND_H

#include "backends/mpi/mpi_abi.h"
#include "core/group.h"

typedef struct mpi_impl {
  mpi_h comm; /* our own communicator (a dup or a split), errors return */
} mpi_impl;

extern const dc_backend_ops dc_mpi_ops;

/* Largest piece one MPI call moves: elements for reductions, bytes for data
 * that is only moved. MPI counts are int; the default, 2^30, stays below
 * INT_MAX. DISTCOMM_MPI_PIECE (a test knob) makes it small so that the
 * piecewise paths run on small buffers. */
extern size_t dc_mpi_piece;

/* Record MPI's failure of call: the group's detail gets MPI's own text. */
dc_status dc_mpi_fail(dc_group *g, const char *call, int rc);

/* Make a group around comm (which it then owns, freeing it on failure),
 * with errors set to return. 0, MPI's error code, or -1: out of memory. */
int dc_mpi_wrap(mpi_h comm, uint64_t id, dc_group **out);

/* dc_group_split on an MPI group: MPI_Comm_split. */
dc_status dc_mpi_split_all(dc_group *g, int color, int key, dc_group **out);

/* Free a group's communicator; the last one freed ends MPI (when we
 * started it). */
void dc_mpi_destroy(dc_group *g);

#endif
