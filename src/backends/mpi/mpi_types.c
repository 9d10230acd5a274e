/* Which MPI datatype and op reduce each (dtype, op), and the user-defined
 * ones where MPI has no built-in with our semantics. */
#include <string.h>

#include "backends/mpi/mpi_types.h"
#include "kernels/reduce.h"

/* A committed contiguous type of one element's bytes for each dtype reduced
 * by dc_reduce; its handle tells the callback which dtype it got. */
static mpi_h user_type[DC_DTYPE_COUNT];
static mpi_h user_op[DC_OP_COUNT];

/* float16/bfloat16: MPI has none. float32/float64 max/min: MPI's built-ins
 * do not promise that NaN wins, and every backend must give the same bits. */
static int needs_user(dc_dtype t, dc_op op) {
  if (t == DC_FLOAT16 || t == DC_BFLOAT16)
    return 1;
  return (t == DC_FLOAT32 || t == DC_FLOAT64) && (op == DC_MAX || op == DC_MIN);
}

void dc_mpi_user_reduce(void *in, void *inout, int len, mpi_h dt, dc_op op) {
  for (int t = 0; t < DC_DTYPE_COUNT; t++)
    if (user_type[t] && user_type[t] == dt && len > 0) {
      dc_reduce(inout, in, (size_t)len, (dc_dtype)t, op);
      return;
    }
}

void dc_mpi_reduce_kind(dc_dtype t, dc_op op, mpi_h *type, mpi_h *mop) {
  const mpi_consts *k = &dc_mpi.k;
  if (needs_user(t, op)) {
    *type = user_type[t];
    *mop = user_op[op];
    return;
  }
  static const int builtin[DC_OP_COUNT] = {[DC_SUM] = MPI_OP_SUM,
                                           [DC_MAX] = MPI_OP_MAX,
                                           [DC_MIN] = MPI_OP_MIN,
                                           [DC_PROD] = MPI_OP_PROD};
  *type = k->type[t];
  *mop = k->op[builtin[op]];
  if (t == DC_BOOL) /* any non-zero byte is true; the result is 0 or 1 */
    *mop = k->op[op == DC_SUM || op == DC_MAX ? MPI_OP_LOR : MPI_OP_LAND];
}

static int make_type(dc_dtype t) {
  int rc = dc_MPI_Type_contiguous((int)dc_dtype_size(t), dc_mpi.k.byte,
                                  &user_type[t]);
  return rc ? rc : dc_MPI_Type_commit(&user_type[t]);
}

int dc_mpi_types_create(const char **call) {
  static const dc_dtype user[] = {DC_FLOAT16, DC_BFLOAT16, DC_FLOAT32,
                                  DC_FLOAT64};
  for (size_t i = 0; i < sizeof user / sizeof user[0]; i++) {
    int rc = make_type(user[i]);
    if (rc) {
      *call = "MPI_Type_contiguous";
      return rc;
    }
  }
  for (int op = 0; op < DC_OP_COUNT; op++) {
    int rc = dc_MPI_Op_create_dc((dc_op)op, &user_op[op]);
    if (rc) {
      *call = "MPI_Op_create";
      return rc;
    }
  }
  return 0;
}

void dc_mpi_types_free(void) {
  for (int t = 0; t < DC_DTYPE_COUNT; t++)
    if (user_type[t])
      dc_MPI_Type_free(&user_type[t]);
  for (int op = 0; op < DC_OP_COUNT; op++)
    if (user_op[op])
      dc_MPI_Op_free(&user_op[op]);
  memset(user_type, 0, sizeof user_type);
  memset(user_op, 0, sizeof user_op);
}
