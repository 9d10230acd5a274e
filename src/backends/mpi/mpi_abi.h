/* The MPI library as loaded at run time (mpi_abi.c): the only place that
 * knows the two ABIs apart.
 *
 * Open MPI's handles (MPI_Comm, MPI_Datatype, MPI_Op, MPI_Errhandler) are
 * pointers to its exported global objects (&ompi_mpi_comm_world); MPICH's
 * (and its derivatives': Intel MPI, MVAPICH) are ints with fixed values
 * (MPI_COMM_WORLD == 0x44000000). The rest of the backend holds either kind
 * in an mpi_h and calls the dc_MPI_* wrappers below, which convert to the
 * loaded library's real types, so no call goes through a mistyped pointer. */
#ifndef DC_BACKENDS_MPI_ABI_H
#define DC_BACKENDS_MPI_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "distcomm.h"

typedef uintptr_t mpi_h; /* a handle of either ABI */

typedef enum mpi_abi { MPI_ABI_OMPI, MPI_ABI_MPICH } mpi_abi;

/* Which built-in ops the backend uses (dc ops map onto these). */
enum {
  MPI_OP_SUM,
  MPI_OP_MAX,
  MPI_OP_MIN,
  MPI_OP_PROD,
  MPI_OP_LAND,
  MPI_OP_LOR,
  MPI_NOPS
};

/* Native element types the backend uses; 0 where MPI has no exact match. */
typedef struct mpi_consts {
  mpi_h comm_world, comm_null, errors_return, byte;
  mpi_h op[MPI_NOPS];
  mpi_h type[DC_DTYPE_COUNT]; /* native element type per dtype, or 0 */
  void *in_place;
  int undefined, thread_multiple;
} mpi_consts;

typedef struct mpi_lib {
  void *dl; /* never closed: MPI cannot be loaded twice */
  mpi_abi abi;
  char name[256];    /* the library file that was loaded */
  char version[160]; /* first line of MPI_Get_library_version */
  mpi_consts k;
} mpi_lib;

/* The library, once dc_mpi_load() succeeded. */
extern mpi_lib dc_mpi;

/* dlopen the library (MLX_MPI_LIBNAME, else candidates chosen from the
 * launcher's variables: prefer is "ompi" or "mpich"), resolve every symbol,
 * detect the ABI. Loads once per process; DC_ERR_UNAVAILABLE with the reason
 * in why otherwise. */
dc_status dc_mpi_load(const char *prefer, char *why, size_t whylen);

/* The user-defined reduction every op created by dc_MPI_Op_create_dc calls:
 * defined by the backend (mpi_types.c), given the MPI datatype it was called
 * with as an mpi_h. */
void dc_mpi_user_reduce(void *in, void *inout, int len, mpi_h dt, dc_op op);

/* Wrappers: the MPI calls of the same name with handles as mpi_h. Each
 * returns MPI's error code (0 on success). */
int dc_MPI_Init_thread(int required, int *provided);
int dc_MPI_Initialized(int *flag);
int dc_MPI_Finalized(int *flag);
int dc_MPI_Finalize(void);
int dc_MPI_Query_thread(int *provided);
int dc_MPI_Error_string(int code, char *buf, int *len);
int dc_MPI_Comm_rank(mpi_h comm, int *rank);
int dc_MPI_Comm_size(mpi_h comm, int *size);
int dc_MPI_Comm_set_errhandler(mpi_h comm, mpi_h errh);
int dc_MPI_Comm_dup(mpi_h comm, mpi_h *out);
int dc_MPI_Comm_split(mpi_h comm, int color, int key, mpi_h *out);
int dc_MPI_Comm_free(mpi_h *comm);
int dc_MPI_Type_contiguous(int count, mpi_h old, mpi_h *out);
int dc_MPI_Type_commit(mpi_h *type);
int dc_MPI_Type_free(mpi_h *type);
/* MPI_Op_create with the commutative reduction dc_mpi_user_reduce(op). */
int dc_MPI_Op_create_dc(dc_op op, mpi_h *out);
int dc_MPI_Op_free(mpi_h *op);
int dc_MPI_Allreduce(const void *s, void *r, int n, mpi_h t, mpi_h op,
                     mpi_h comm);
int dc_MPI_Allgather(const void *s, int sn, mpi_h st, void *r, int rn, mpi_h rt,
                     mpi_h comm);
int dc_MPI_Reduce_scatter_block(const void *s, void *r, int n, mpi_h t,
                                mpi_h op, mpi_h comm);
int dc_MPI_Reduce(const void *s, void *r, int n, mpi_h t, mpi_h op, int root,
                  mpi_h comm);
int dc_MPI_Bcast(void *buf, int n, mpi_h t, int root, mpi_h comm);
int dc_MPI_Alltoallv(const void *s, const int *sc, const int *sd, mpi_h st,
                     void *r, const int *rc, const int *rd, mpi_h rt,
                     mpi_h comm);
int dc_MPI_Gather(const void *s, int sn, mpi_h st, void *r, int rn, mpi_h rt,
                  int root, mpi_h comm);
int dc_MPI_Scatter(const void *s, int sn, mpi_h st, void *r, int rn, mpi_h rt,
                   int root, mpi_h comm);
int dc_MPI_Send(const void *buf, int n, mpi_h t, int dst, int tag, mpi_h comm);
int dc_MPI_Recv(void *buf, int n, mpi_h t, int src, int tag, mpi_h comm);
int dc_MPI_Barrier(mpi_h comm);

#endif
