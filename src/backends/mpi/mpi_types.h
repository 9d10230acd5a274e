/* MPI datatypes and ops for each (dtype, op) (mpi_types.c). */
#ifndef DC_BACKENDS_MPI_TYPES_H
#define DC_BACKENDS_MPI_TYPES_H

#include "backends/mpi/mpi_abi.h"

/* Create the user-defined types and ops (after MPI_Init). On failure returns
 * MPI's error code and names the call that failed in *call. */
int dc_mpi_types_create(const char **call);

/* Free them (before MPI_Finalize); safe when none were created. */
void dc_mpi_types_free(void);

/* The datatype and op that reduce (t, op) with our semantics: a built-in
 * pair where MPI has one, else our contiguous type and dc_reduce op. The
 * pair is valid for every dtype/op that dc_reduce_check accepts. */
void dc_mpi_reduce_kind(dc_dtype t, dc_op op, mpi_h *type, mpi_h *mop);

#endif
