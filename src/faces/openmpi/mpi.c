/* libdistcomm-ompi.so: the MPI calls MLX's mpi backend resolves by name
 * (MLX_MPI_LIBNAME), answered by distcomm. Nothing else is exported. MPI's
 * default error handler is fatal, and so is ours: a failed call prints
 * distcomm's detail (op, peer, address) and ends the process, so the job
 * ends instead of hanging. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "face.h"

#define FACE_API __attribute__((visibility("default")))

/* Open MPI's predefined objects are padded structs; MLX only takes their
 * addresses. Ours hold the face's object at the start. */
#define PAD_COMM 512
#define PAD_TYPE 512
#define PAD_OP 256
typedef union {
  face_comm c;
  char pad[PAD_COMM];
} predef_comm;
typedef union {
  face_type t;
  char pad[PAD_TYPE];
} predef_type;
typedef union {
  face_op o;
  char pad[PAD_OP];
} predef_op;

FACE_API predef_comm ompi_mpi_comm_world;

#define OP(name, dcop)                                                         \
  FACE_API predef_op ompi_mpi_op_##name = {.o = {dcop, NULL, -1, -1}};
OP(sum, DC_SUM)
OP(max, DC_MAX)
OP(min, DC_MIN)
#undef OP

#define TYPE(name, dt, bytes)                                                  \
  FACE_API predef_type ompi_mpi_##name = {.t = {dt, bytes}};
TYPE(c_bool, DC_BOOL, 1)
TYPE(int8_t, DC_INT8, 1)
TYPE(uint8_t, DC_UINT8, 1)
TYPE(int16_t, DC_INT16, 2)
TYPE(uint16_t, DC_UINT16, 2)
TYPE(int32_t, DC_INT32, 4)
TYPE(uint32_t, DC_UINT32, 4)
TYPE(int64_t, DC_INT64, 8)
TYPE(uint64_t, DC_UINT64, 8)
TYPE(float, DC_FLOAT32, 4)
TYPE(double, DC_FLOAT64, 8)
TYPE(c_complex, DC_COMPLEX64, 8)
#undef TYPE

/* ---- errors ------------------------------------------------------------ */

static int world_rank(void) {
  dc_group *g = ompi_mpi_comm_world.c.g;
  return g ? dc_group_rank(g) : -1;
}

/* MPI_ERRORS_ARE_FATAL: say what failed and end this rank. _exit, not
 * exit: the program's exit handlers would call into a broken group. */
void dc_face_fatal(const char *call, dc_status st, const char *detail) {
  char who[48] = "distcomm-ompi"; /* no rank before MPI_Init worked */
  if (world_rank() >= 0)
    snprintf(who, sizeof who, "distcomm-ompi rank %d", world_rank());
  fprintf(stderr, "[%s] %s failed: %s (%s)%s%s\n", who, call,
          dc_status_name(st), dc_strerror(st), detail && *detail ? ": " : "",
          detail ? detail : "");
  fflush(NULL);
  _exit(1);
}

static void check(const char *call, dc_status st, const dc_group *g) {
  if (st != DC_OK)
    dc_face_fatal(call, st, g ? dc_group_last_error(g) : dc_last_error());
}

static void bad_arg(const char *call, const char *what) {
  dc_face_fatal(call, DC_ERR_INVALID, what);
}

dc_group *dc_face_group(const char *call, MPI_Comm comm) {
  face_comm *c = comm;
  if (c == NULL || c->g == NULL)
    bad_arg(call, "the communicator is null or MPI_Init was not called");
  return c->g;
}

static face_type *type_of(const char *call, MPI_Datatype t) {
  if (t == NULL)
    bad_arg(call, "the datatype is null");
  return t;
}

/* ---- setup ------------------------------------------------------------- */

FACE_API int MPI_Get_library_version(char *version, int *resultlen) {
  int n = snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING, "%s",
                   FACE_VERSION_TEXT);
  *resultlen = n < MPI_MAX_LIBRARY_VERSION_STRING
                   ? n
                   : MPI_MAX_LIBRARY_VERSION_STRING - 1;
  return MPI_SUCCESS;
}

/* The world from distcomm's own configuration, never its mpi backend (that
 * would load this library again): the mesh when MLX_IBV_DEVICES is set,
 * else the ring (DISTCOMM_RANK + DISTCOMM_HOSTFILE from distcomm-launch
 * --mlx, or a coordinator). Nothing configured: a world of one, as Open
 * MPI gives a program not started by mpirun. */
FACE_API int MPI_Init(int *argc, char ***argv) {
  (void)argc, (void)argv;
  const char *mesh = getenv("MLX_IBV_DEVICES");
  dc_group *g = NULL;
  dc_status st = dc_init(mesh && *mesh ? "mesh" : "ring", 0, &g);
  if (st != DC_OK)
    dc_face_fatal("MPI_Init", st, dc_last_error());
  ompi_mpi_comm_world.c.g = g;
  return MPI_SUCCESS;
}

FACE_API int MPI_Finalize(void) {
  dc_group_free(ompi_mpi_comm_world.c.g);
  ompi_mpi_comm_world.c.g = NULL;
  return MPI_SUCCESS;
}

FACE_API int MPI_Comm_rank(MPI_Comm comm, int *rank) {
  *rank = dc_group_rank(dc_face_group("MPI_Comm_rank", comm));
  return MPI_SUCCESS;
}

FACE_API int MPI_Comm_size(MPI_Comm comm, int *size) {
  *size = dc_group_size(dc_face_group("MPI_Comm_size", comm));
  return MPI_SUCCESS;
}

FACE_API int MPI_Comm_split(MPI_Comm comm, int color, int key,
                            MPI_Comm *newcomm) {
  dc_group *g = dc_face_group("MPI_Comm_split", comm), *out = NULL;
  check("MPI_Comm_split",
        dc_group_split(g, color < 0 ? DC_UNDEFINED : color, key, &out), g);
  face_comm *c = NULL;
  if (out != NULL && (c = malloc(sizeof *c)) == NULL)
    dc_face_fatal("MPI_Comm_split", DC_ERR_NOMEM,
                  "no memory for the communicator");
  if (c != NULL)
    c->g = out;
  *newcomm = c; /* MPI_COMM_NULL for MPI_UNDEFINED */
  return MPI_SUCCESS;
}

FACE_API int MPI_Comm_free(MPI_Comm *comm) {
  face_comm *c = *comm;
  if (c == &ompi_mpi_comm_world.c)
    bad_arg("MPI_Comm_free", "MPI_COMM_WORLD cannot be freed");
  if (c != NULL) {
    dc_group_free(c->g);
    free(c);
  }
  *comm = NULL;
  return MPI_SUCCESS;
}

FACE_API int MPI_Type_contiguous(int count, MPI_Datatype oldtype,
                                 MPI_Datatype *newtype) {
  face_type *old = type_of("MPI_Type_contiguous", oldtype), *t;
  if (count < 0)
    bad_arg("MPI_Type_contiguous", "count is negative");
  if ((t = malloc(sizeof *t)) == NULL)
    dc_face_fatal("MPI_Type_contiguous", DC_ERR_NOMEM,
                  "no memory for the type");
  *t = (face_type){FACE_RAW, (size_t)count * old->size};
  *newtype = t;
  return MPI_SUCCESS;
}

FACE_API int MPI_Type_commit(MPI_Datatype *type) {
  type_of("MPI_Type_commit", *type);
  return MPI_SUCCESS;
}

FACE_API int MPI_Op_create(MPI_User_function *fn, int commute, MPI_Op *op) {
  face_op *o;
  if (fn == NULL)
    bad_arg("MPI_Op_create", "the function is null");
  if (!commute) /* we reduce in any order */
    dc_face_fatal("MPI_Op_create", DC_ERR_NOT_SUPPORTED,
                  "non-commutative user ops are not supported");
  if ((o = malloc(sizeof *o)) == NULL)
    dc_face_fatal("MPI_Op_create", DC_ERR_NOMEM, "no memory for the op");
  *o = (face_op){-1, fn, -1, -1};
  if (dc_face_recognise(fn, &o->as_dtype, &o->as_op) != 0)
    o->as_dtype = o->as_op = -1;
  *op = o;
  return MPI_SUCCESS;
}
