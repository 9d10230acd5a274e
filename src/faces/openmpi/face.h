/* The MPI face's objects (libdistcomm-ompi.so): what MLX's mpi backend
 * (mlx/distributed/mpi/mpi.cpp) calls, in Open MPI's conventions, served by
 * distcomm. Handles are addresses: of the exported ompi_mpi_* objects for
 * the predefined ones, of heap objects for those MPI_Type_contiguous,
 * MPI_Op_create and MPI_Comm_split make. Uses only include/distcomm.h. */
#ifndef DC_FACE_OPENMPI_FACE_H
#define DC_FACE_OPENMPI_FACE_H

#include <stddef.h>

#include "distcomm.h"

typedef void *MPI_Comm;
typedef void *MPI_Datatype;
typedef void *MPI_Op;
typedef void(MPI_User_function)(void *, void *, int *, MPI_Datatype *);

/* Open MPI 4's public status layout (MLX declares the same). */
typedef struct ompi_status_public_t {
  int MPI_SOURCE;
  int MPI_TAG;
  int MPI_ERROR;
  int _cancelled;
  size_t _ucount;
} MPI_Status;

#define MPI_SUCCESS 0
#define MPI_ERR_ARG 13
#define MPI_ANY_SOURCE (-1)
#define MPI_ANY_TAG (-1)
#define MPI_UNDEFINED (-32766)
#define MPI_IN_PLACE ((void *)1)
#define MPI_MAX_LIBRARY_VERSION_STRING 256

#define FACE_RAW (-1) /* a datatype of bytes (MPI_Type_contiguous) */

typedef struct face_comm {
  dc_group *g;
} face_comm;

typedef struct face_type {
  int dtype;   /* a dc_dtype, or FACE_RAW */
  size_t size; /* bytes per element */
} face_type;

typedef struct face_op {
  int builtin;           /* a dc_op, or -1 for a user function */
  MPI_User_function *fn; /* the user's */
  int as_dtype, as_op;   /* what fn was recognised as; -1 when not */
} face_op;

/* The face's version text (MPI_Get_library_version). */
#define FACE_VERSION_TEXT                                                      \
  "distcomm " DISTCOMM_VERSION_STRING                                          \
  " (libdistcomm-ompi: the Open MPI ABI subset MLX uses, served by "           \
  "distcomm; not Open MPI)"

/* Recognise a user reduction: which (dtype, op) of float16/bfloat16 x
 * sum/max/min fn computes, from its results on probe values; 0 when found,
 * -1 when not (the face then runs fn itself). Hidden: for the unit test. */
int dc_face_recognise(MPI_User_function *fn, int *dtype, int *op);

/* MPI_ERRORS_ARE_FATAL: prints "[distcomm-ompi rank R] CALL failed: ..."
 * with distcomm's detail and ends the process. */
void dc_face_fatal(const char *call, dc_status st, const char *detail)
    __attribute__((noreturn));
/* The group behind comm; fatal when there is none. */
dc_group *dc_face_group(const char *call, MPI_Comm comm);

#endif
