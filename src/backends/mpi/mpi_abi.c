/* Loading libmpi with dlopen and bridging its ABI (see mpi_abi.h).
 *
 * Nothing here includes an MPI header: the build needs no MPI. The values
 * below are the two ABIs' published constants (MPICH's handle values are
 * part of its ABI, kept stable by the MPICH ABI initiative; Open MPI's are
 * addresses of exported objects, found with dlsym). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/mpi/mpi_abi.h"
#include "config/env.h"

mpi_lib dc_mpi;

/* ---- the functions, typed per ABI ------------------------------------- */

/* X(name, parameter types) with T standing for a handle. Both ABIs have the
 * same functions with the same parameters but for T. */
#define MPI_FUNCS(X, T)                                                        \
  X(Init_thread, (int *, char ***, int, int *))                                \
  X(Initialized, (int *))                                                      \
  X(Finalized, (int *))                                                        \
  X(Finalize, (void))                                                          \
  X(Query_thread, (int *))                                                     \
  X(Error_string, (int, char *, int *))                                        \
  X(Get_library_version, (char *, int *))                                      \
  X(Comm_rank, (T, int *))                                                     \
  X(Comm_size, (T, int *))                                                     \
  X(Comm_set_errhandler, (T, T))                                               \
  X(Comm_dup, (T, T *))                                                        \
  X(Comm_split, (T, int, int, T *))                                            \
  X(Comm_free, (T *))                                                          \
  X(Type_contiguous, (int, T, T *))                                            \
  X(Type_commit, (T *))                                                        \
  X(Type_free, (T *))                                                          \
  X(Op_create, (void (*)(void *, void *, int *, T *), int, T *))               \
  X(Op_free, (T *))                                                            \
  X(Allreduce, (const void *, void *, int, T, T, T))                           \
  X(Allgather, (const void *, int, T, void *, int, T, T))                      \
  X(Reduce_scatter_block, (const void *, void *, int, T, T, T))                \
  X(Reduce, (const void *, void *, int, T, T, int, T))                         \
  X(Bcast, (void *, int, T, int, T))                                           \
  X(Alltoallv, (const void *, const int *, const int *, T, void *,             \
                const int *, const int *, T, T))                               \
  X(Gather, (const void *, int, T, void *, int, T, int, T))                    \
  X(Scatter, (const void *, int, T, void *, int, T, int, T))                   \
  X(Send, (const void *, int, T, int, int, T))                                 \
  X(Recv, (void *, int, T, int, int, T, void *))                               \
  X(Barrier, (T))

#define MEMBER_(name, params) int(*name) params;
#define NAME_(name, params) "MPI_" #name,
typedef struct ompi_api {
  MPI_FUNCS(MEMBER_, void *)
} ompi_api;
typedef struct mpich_api {
  MPI_FUNCS(MEMBER_, int)
} mpich_api;
static const char *const fn_names[] = {MPI_FUNCS(NAME_, int)};
#define NFUNCS (sizeof fn_names / sizeof fn_names[0])

/* Filled by slot from dlsym; read through the member of the loaded ABI. */
static union {
  ompi_api o;
  mpich_api m;
  void *slot[NFUNCS];
} api;

_Static_assert(sizeof(ompi_api) == sizeof(void *) * NFUNCS, "packed table");
_Static_assert(sizeof(mpich_api) == sizeof(void *) * NFUNCS, "packed table");

#define OMPI (dc_mpi.abi == MPI_ABI_OMPI)
#define P(h) ((void *)(h))
#define I(h) ((int)(uint32_t)(h))
#define H_OF_INT(v) ((mpi_h)(uint32_t)(v))

/* ---- constants -------------------------------------------------------- */

/* MPICH's fixed handle values (its mpi.h). */
static void mpich_consts(mpi_consts *k) {
  static const mpi_h types[DC_DTYPE_COUNT] = {
      [DC_BOOL] = 0x4c00013b, /* uint8_t: reduced with MPI_LOR / MPI_LAND */
      [DC_INT8] = 0x4c000137,      [DC_INT16] = 0x4c000238,
      [DC_INT32] = 0x4c000439,     [DC_INT64] = 0x4c00083a,
      [DC_UINT8] = 0x4c00013b,     [DC_UINT16] = 0x4c00023c,
      [DC_UINT32] = 0x4c00043d,    [DC_UINT64] = 0x4c00083e,
      [DC_FLOAT32] = 0x4c00040a,   [DC_FLOAT64] = 0x4c00080b,
      [DC_COMPLEX64] = 0x4c000840, /* MPI_C_FLOAT_COMPLEX */
  };
  static const mpi_h ops[MPI_NOPS] = {
      [MPI_OP_MAX] = 0x58000001,  [MPI_OP_MIN] = 0x58000002,
      [MPI_OP_SUM] = 0x58000003,  [MPI_OP_PROD] = 0x58000004,
      [MPI_OP_LAND] = 0x58000005, [MPI_OP_LOR] = 0x58000007,
  };
  k->comm_world = 0x44000000;
  k->comm_null = 0x04000000;
  k->errors_return = 0x54000001;
  k->byte = 0x4c00010d;
  memcpy(k->type, types, sizeof types);
  memcpy(k->op, ops, sizeof ops);
  k->in_place = (void *)-1;
}

/* Open MPI's handles are the addresses of these exported objects. */
static int ompi_consts(void *dl, mpi_consts *k, char *why, size_t whylen) {
  static const struct {
    const char *sym;
    size_t off;
  } objs[] = {
#define K_(field, sym) {sym, offsetof(mpi_consts, field)}
      K_(comm_world, "ompi_mpi_comm_world"),
      K_(comm_null, "ompi_mpi_comm_null"),
      K_(errors_return, "ompi_mpi_errors_return"),
      K_(byte, "ompi_mpi_byte"),
      K_(op[MPI_OP_SUM], "ompi_mpi_op_sum"),
      K_(op[MPI_OP_MAX], "ompi_mpi_op_max"),
      K_(op[MPI_OP_MIN], "ompi_mpi_op_min"),
      K_(op[MPI_OP_PROD], "ompi_mpi_op_prod"),
      K_(op[MPI_OP_LAND], "ompi_mpi_op_land"),
      K_(op[MPI_OP_LOR], "ompi_mpi_op_lor"),
      K_(type[DC_BOOL], "ompi_mpi_uint8_t"),
      K_(type[DC_INT8], "ompi_mpi_int8_t"),
      K_(type[DC_INT16], "ompi_mpi_int16_t"),
      K_(type[DC_INT32], "ompi_mpi_int32_t"),
      K_(type[DC_INT64], "ompi_mpi_int64_t"),
      K_(type[DC_UINT8], "ompi_mpi_uint8_t"),
      K_(type[DC_UINT16], "ompi_mpi_uint16_t"),
      K_(type[DC_UINT32], "ompi_mpi_uint32_t"),
      K_(type[DC_UINT64], "ompi_mpi_uint64_t"),
      K_(type[DC_FLOAT32], "ompi_mpi_float"),
      K_(type[DC_FLOAT64], "ompi_mpi_double"),
      K_(type[DC_COMPLEX64], "ompi_mpi_c_float_complex"),
#undef K_
  };
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) {
    void *p = dlsym(dl, objs[i].sym);
    if (!p) {
      snprintf(why, whylen, "Open MPI object %s is missing", objs[i].sym);
      return -1;
    }
    *(mpi_h *)((char *)k + objs[i].off) = (mpi_h)p;
  }
  k->in_place = (void *)1;
  return 0;
}

/* ---- loading ---------------------------------------------------------- */

static int resolve(void *dl, char *why, size_t whylen) {
  for (size_t i = 0; i < NFUNCS; i++) {
    api.slot[i] = dlsym(dl, fn_names[i]);
    if (!api.slot[i]) {
      snprintf(why, whylen, "it has no %s (not an MPI library?)", fn_names[i]);
      return -1;
    }
  }
  return 0;
}

/* Open MPI exports its predefined objects; MPICH's family says so in its
 * version string. Anything else has an ABI we do not know: refuse it. */
static int detect(void *dl, char *why, size_t whylen) {
  static char ver[8192]; /* MPICH's MPI_MAX_LIBRARY_VERSION_STRING */
  int len = 0;
  if (api.m.Get_library_version(ver, &len) != 0)
    ver[0] = '\0';
  ver[sizeof ver - 1] = '\0';
  snprintf(dc_mpi.version, sizeof dc_mpi.version, "%.*s",
           (int)strcspn(ver, "\n"), ver);
  dc_mpi.k.undefined = -32766; /* MPI_UNDEFINED: the same in both */
  dc_mpi.k.thread_multiple = 3;
  if (dlsym(dl, "ompi_mpi_comm_world")) {
    dc_mpi.abi = MPI_ABI_OMPI;
    return ompi_consts(dl, &dc_mpi.k, why, whylen);
  }
  if (strstr(ver, "MPICH") || strstr(ver, "Intel") || strstr(ver, "MVAPICH")) {
    dc_mpi.abi = MPI_ABI_MPICH;
    mpich_consts(&dc_mpi.k);
    return 0;
  }
  snprintf(why, whylen,
           "its ABI is neither Open MPI's nor MPICH's (\"%.100s\")",
           dc_mpi.version);
  return -1;
}

/* RTLD_GLOBAL: Open MPI's own plugins (mca_*.so) resolve libmpi's symbols
 * from the global scope and fail to load otherwise. */
static int try_open(const char *name, char *why, size_t whylen) {
  void *dl = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
  if (!dl) {
    const char *e = dlerror();
    snprintf(why, whylen, "%s", e ? e : "dlopen failed");
    return -1;
  }
  char sub[200];
  if (resolve(dl, sub, sizeof sub) != 0 || detect(dl, sub, sizeof sub) != 0) {
    snprintf(why, whylen, "%s: %s", name, sub);
    dlclose(dl);
    return -1;
  }
  dc_mpi.dl = dl;
  snprintf(dc_mpi.name, sizeof dc_mpi.name, "%s", name);
  return 0;
}

/* Debian names MPICH libmpich.so.12; upstream MPICH and Intel MPI install
 * libmpi.so.12; Open MPI 4 and 5 are libmpi.so.40. */
dc_status dc_mpi_load(const char *prefer, char *why, size_t whylen) {
  static const char *const ompi_first[] = {"libmpi.so.40", "libmpich.so.12",
                                           "libmpi.so.12"};
  static const char *const mpich_first[] = {"libmpich.so.12", "libmpi.so.12",
                                            "libmpi.so.40"};
  if (dc_mpi.dl)
    return DC_OK;
  const char *env = dc_env_str(DC_ENV_MPI_LIBNAME);
  if (env && *env) {
    char e[400];
    if (try_open(env, e, sizeof e) == 0)
      return DC_OK;
    snprintf(why, whylen, "mpi: cannot use MLX_MPI_LIBNAME=%s: %s", env, e);
    return DC_ERR_UNAVAILABLE;
  }
  const char *const *names =
      strcmp(prefer, "mpich") == 0 ? mpich_first : ompi_first;
  char e[3][320];
  for (int i = 0; i < 3; i++)
    if (try_open(names[i], e[i], sizeof e[i]) == 0)
      return DC_OK;
  snprintf(why, whylen,
           "mpi: no MPI library could be loaded (install Open MPI or MPICH, "
           "or set MLX_MPI_LIBNAME): %s; %s; %s",
           e[0], e[1], e[2]);
  return DC_ERR_UNAVAILABLE;
}

/* ---- wrappers: one branch per ABI ------------------------------------- */

int dc_MPI_Init_thread(int required, int *provided) {
  return api.o.Init_thread(NULL, NULL, required, provided);
}
int dc_MPI_Initialized(int *flag) { return api.o.Initialized(flag); }
int dc_MPI_Finalized(int *flag) { return api.o.Finalized(flag); }
int dc_MPI_Finalize(void) { return api.o.Finalize(); }
int dc_MPI_Query_thread(int *provided) { return api.o.Query_thread(provided); }
int dc_MPI_Error_string(int code, char *buf, int *len) {
  return api.o.Error_string(code, buf, len);
}

int dc_MPI_Comm_rank(mpi_h c, int *rank) {
  return OMPI ? api.o.Comm_rank(P(c), rank) : api.m.Comm_rank(I(c), rank);
}
int dc_MPI_Comm_size(mpi_h c, int *size) {
  return OMPI ? api.o.Comm_size(P(c), size) : api.m.Comm_size(I(c), size);
}
int dc_MPI_Comm_set_errhandler(mpi_h c, mpi_h e) {
  return OMPI ? api.o.Comm_set_errhandler(P(c), P(e))
              : api.m.Comm_set_errhandler(I(c), I(e));
}

/* Calls that update a handle in place (free sets it to the null handle):
 * through a variable of the ABI's real type. */
#define INOUT_CALL(p, fn)                                                      \
  do {                                                                         \
    if (OMPI) {                                                                \
      void *h_ = P(*(p));                                                      \
      int rc_ = api.o.fn(&h_);                                                 \
      *(p) = (mpi_h)h_;                                                        \
      return rc_;                                                              \
    }                                                                          \
    int h_ = I(*(p));                                                          \
    int rc_ = api.m.fn(&h_);                                                   \
    *(p) = H_OF_INT(h_);                                                       \
    return rc_;                                                                \
  } while (0)

/* Calls that create a handle: the same, with no input handle to convert. */
int dc_MPI_Comm_dup(mpi_h c, mpi_h *out) {
  if (OMPI) {
    void *h = NULL;
    int rc = api.o.Comm_dup(P(c), &h);
    *out = (mpi_h)h;
    return rc;
  }
  int h = 0;
  int rc = api.m.Comm_dup(I(c), &h);
  *out = H_OF_INT(h);
  return rc;
}

int dc_MPI_Comm_split(mpi_h c, int color, int key, mpi_h *out) {
  if (OMPI) {
    void *h = NULL;
    int rc = api.o.Comm_split(P(c), color, key, &h);
    *out = (mpi_h)h;
    return rc;
  }
  int h = 0;
  int rc = api.m.Comm_split(I(c), color, key, &h);
  *out = H_OF_INT(h);
  return rc;
}

int dc_MPI_Type_contiguous(int n, mpi_h old, mpi_h *out) {
  if (OMPI) {
    void *h = NULL;
    int rc = api.o.Type_contiguous(n, P(old), &h);
    *out = (mpi_h)h;
    return rc;
  }
  int h = 0;
  int rc = api.m.Type_contiguous(n, I(old), &h);
  *out = H_OF_INT(h);
  return rc;
}

int dc_MPI_Comm_free(mpi_h *c) { INOUT_CALL(c, Comm_free); }
int dc_MPI_Type_commit(mpi_h *t) { INOUT_CALL(t, Type_commit); }
int dc_MPI_Type_free(mpi_h *t) { INOUT_CALL(t, Type_free); }
int dc_MPI_Op_free(mpi_h *op) { INOUT_CALL(op, Op_free); }

/* One callback per (op, ABI): MPI passes the datatype by pointer to a handle
 * of its own type, and nothing else tells the callback which op it runs. */
#define USER_FNS(op)                                                           \
  static void op##_ompi(void *in, void *io, int *n, void **dt) {               \
    dc_mpi_user_reduce(in, io, *n, (mpi_h)*dt, op);                            \
  }                                                                            \
  static void op##_mpich(void *in, void *io, int *n, int *dt) {                \
    dc_mpi_user_reduce(in, io, *n, H_OF_INT(*dt), op);                         \
  }
USER_FNS(DC_SUM)
USER_FNS(DC_MAX)
USER_FNS(DC_MIN)
USER_FNS(DC_PROD)

int dc_MPI_Op_create_dc(dc_op op, mpi_h *out) {
  static void (*const fo[DC_OP_COUNT])(void *, void *, int *, void **) = {
      DC_SUM_ompi, DC_MAX_ompi, DC_MIN_ompi, DC_PROD_ompi};
  static void (*const fm[DC_OP_COUNT])(void *, void *, int *, int *) = {
      DC_SUM_mpich, DC_MAX_mpich, DC_MIN_mpich, DC_PROD_mpich};
  if (OMPI) {
    void *h = NULL;
    int rc = api.o.Op_create(fo[op], 1, &h); /* 1: commutative */
    *out = (mpi_h)h;
    return rc;
  }
  int h = 0;
  int rc = api.m.Op_create(fm[op], 1, &h);
  *out = H_OF_INT(h);
  return rc;
}

int dc_MPI_Allreduce(const void *s, void *r, int n, mpi_h t, mpi_h op,
                     mpi_h c) {
  return OMPI ? api.o.Allreduce(s, r, n, P(t), P(op), P(c))
              : api.m.Allreduce(s, r, n, I(t), I(op), I(c));
}
int dc_MPI_Allgather(const void *s, int sn, mpi_h st, void *r, int rn, mpi_h rt,
                     mpi_h c) {
  return OMPI ? api.o.Allgather(s, sn, P(st), r, rn, P(rt), P(c))
              : api.m.Allgather(s, sn, I(st), r, rn, I(rt), I(c));
}
int dc_MPI_Reduce_scatter_block(const void *s, void *r, int n, mpi_h t,
                                mpi_h op, mpi_h c) {
  return OMPI ? api.o.Reduce_scatter_block(s, r, n, P(t), P(op), P(c))
              : api.m.Reduce_scatter_block(s, r, n, I(t), I(op), I(c));
}
int dc_MPI_Reduce(const void *s, void *r, int n, mpi_h t, mpi_h op, int root,
                  mpi_h c) {
  return OMPI ? api.o.Reduce(s, r, n, P(t), P(op), root, P(c))
              : api.m.Reduce(s, r, n, I(t), I(op), root, I(c));
}
int dc_MPI_Bcast(void *buf, int n, mpi_h t, int root, mpi_h c) {
  return OMPI ? api.o.Bcast(buf, n, P(t), root, P(c))
              : api.m.Bcast(buf, n, I(t), root, I(c));
}
int dc_MPI_Alltoallv(const void *s, const int *sc, const int *sd, mpi_h st,
                     void *r, const int *rc, const int *rd, mpi_h rt, mpi_h c) {
  return OMPI ? api.o.Alltoallv(s, sc, sd, P(st), r, rc, rd, P(rt), P(c))
              : api.m.Alltoallv(s, sc, sd, I(st), r, rc, rd, I(rt), I(c));
}
int dc_MPI_Gather(const void *s, int sn, mpi_h st, void *r, int rn, mpi_h rt,
                  int root, mpi_h c) {
  return OMPI ? api.o.Gather(s, sn, P(st), r, rn, P(rt), root, P(c))
              : api.m.Gather(s, sn, I(st), r, rn, I(rt), root, I(c));
}
int dc_MPI_Scatter(const void *s, int sn, mpi_h st, void *r, int rn, mpi_h rt,
                   int root, mpi_h c) {
  return OMPI ? api.o.Scatter(s, sn, P(st), r, rn, P(rt), root, P(c))
              : api.m.Scatter(s, sn, I(st), r, rn, I(rt), root, I(c));
}
int dc_MPI_Send(const void *buf, int n, mpi_h t, int dst, int tag, mpi_h c) {
  return OMPI ? api.o.Send(buf, n, P(t), dst, tag, P(c))
              : api.m.Send(buf, n, I(t), dst, tag, I(c));
}
/* The status is written to a buffer larger than either ABI's MPI_Status
 * (Open MPI 24 bytes, MPICH 20) rather than passing MPI_STATUS_IGNORE,
 * whose value differs too. */
int dc_MPI_Recv(void *buf, int n, mpi_h t, int src, int tag, mpi_h c) {
  uint64_t status[8];
  return OMPI ? api.o.Recv(buf, n, P(t), src, tag, P(c), status)
              : api.m.Recv(buf, n, I(t), src, tag, I(c), status);
}
int dc_MPI_Barrier(mpi_h c) {
  return OMPI ? api.o.Barrier(P(c)) : api.m.Barrier(I(c));
}
