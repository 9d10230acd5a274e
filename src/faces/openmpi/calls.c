/* The data calls MLX makes: Allreduce, Allgather, Send, Recv. Predefined
 * types and ops, and user ops recognised as float16/bfloat16 sum/max/min,
 * go straight to distcomm's collectives; any other user op is gathered and
 * applied here, rank by rank (correct, slower: size times the bytes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "face.h"

#define FACE_API __attribute__((visibility("default")))

static void check(const char *call, dc_status st, dc_group *g) {
  if (st == DC_OK)
    return;
  char detail[600];
  snprintf(detail, sizeof detail, "rank %d of %d: %s", dc_group_rank(g),
           dc_group_size(g), dc_group_last_error(g));
  dc_face_fatal(call, st, detail);
}

static void need(const char *call, int ok, const char *what) {
  if (!ok)
    dc_face_fatal(call, DC_ERR_INVALID, what);
}

/* Reduce with the user's function: every rank's block, in rank order. */
static void user_reduce(dc_group *g, const void *send, void *recv, int count,
                        MPI_Datatype dt, face_op *o) {
  size_t bytes = (size_t)count * ((face_type *)dt)->size;
  int size = dc_group_size(g);
  unsigned char *all = malloc(bytes * (size_t)size + 1);
  if (all == NULL)
    dc_face_fatal("MPI_Allreduce", DC_ERR_NOMEM,
                  "no memory to gather a user op's data");
  check("MPI_Allreduce", dc_all_gather(g, send, all, bytes, DC_UINT8), g);
  memcpy(recv, all, bytes);
  for (int r = 1; r < size; r++) {
    int n = count;
    o->fn(all + (size_t)r * bytes, recv, &n, &dt);
  }
  free(all);
}

FACE_API int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  const char *call = "MPI_Allreduce";
  dc_group *g = dc_face_group(call, comm);
  face_type *t = datatype;
  face_op *o = op;
  need(call, t != NULL && o != NULL && count >= 0,
       "null datatype or op, or a negative count");
  const void *send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  int dtype = o->builtin >= 0 ? t->dtype : o->as_dtype;
  int dop = o->builtin >= 0 ? o->builtin : o->as_op;
  if (dtype >= 0 && dop >= 0 && dc_dtype_size(dtype) == t->size) {
    check(call, dc_all_reduce(g, send, recvbuf, count, dtype, dop), g);
    return MPI_SUCCESS;
  }
  need(call, o->builtin < 0,
       "a predefined op on a derived datatype is not supported");
  if (sendbuf == MPI_IN_PLACE) { /* the gather needs our block apart */
    size_t bytes = (size_t)count * t->size;
    void *copy = malloc(bytes + 1);
    if (copy == NULL)
      dc_face_fatal(call, DC_ERR_NOMEM, "no memory for the in-place copy");
    memcpy(copy, recvbuf, bytes);
    user_reduce(g, copy, recvbuf, count, datatype, o);
    free(copy);
  } else {
    user_reduce(g, send, recvbuf, count, datatype, o);
  }
  return MPI_SUCCESS;
}

/* Every type travels as bytes: the receiver's type is the sender's. */
FACE_API int MPI_Allgather(const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm) {
  const char *call = "MPI_Allgather";
  dc_group *g = dc_face_group(call, comm);
  face_type *st = sendtype, *rt = recvtype;
  need(call, rt != NULL && recvcount >= 0, "null type or negative count");
  size_t bytes = (size_t)recvcount * rt->size;
  if (sendbuf == MPI_IN_PLACE) {
    unsigned char *mine = malloc(bytes + 1);
    if (mine == NULL)
      dc_face_fatal(call, DC_ERR_NOMEM, "no memory for the in-place copy");
    memcpy(mine, (unsigned char *)recvbuf + bytes * dc_group_rank(g), bytes);
    check(call, dc_all_gather(g, mine, recvbuf, bytes, DC_UINT8), g);
    free(mine);
    return MPI_SUCCESS;
  }
  need(call, st != NULL && (size_t)sendcount * st->size == bytes,
       "the send and receive sizes differ");
  check(call, dc_all_gather(g, sendbuf, recvbuf, bytes, DC_UINT8), g);
  return MPI_SUCCESS;
}

FACE_API int MPI_Send(const void *buf, int count, MPI_Datatype datatype,
                      int dest, int tag, MPI_Comm comm) {
  (void)tag; /* MLX sends tag 0 and receives any tag */
  const char *call = "MPI_Send";
  dc_group *g = dc_face_group(call, comm);
  face_type *t = datatype;
  need(call, t != NULL && count >= 0, "null type or negative count");
  check(call, dc_send(g, buf, (size_t)count * t->size, DC_UINT8, dest), g);
  return MPI_SUCCESS;
}

FACE_API int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source,
                      int tag, MPI_Comm comm, MPI_Status *status) {
  const char *call = "MPI_Recv";
  dc_group *g = dc_face_group(call, comm);
  face_type *t = datatype;
  need(call, t != NULL && count >= 0, "null type or negative count");
  need(call, source != MPI_ANY_SOURCE,
       "MPI_ANY_SOURCE is not supported: name the sender");
  size_t bytes = (size_t)count * t->size;
  check(call, dc_recv(g, buf, bytes, DC_UINT8, source), g);
  if (status != NULL) /* MPI_STATUS_IGNORE is NULL in Open MPI */
    *status = (MPI_Status){.MPI_SOURCE = source,
                           .MPI_TAG = tag == MPI_ANY_TAG ? 0 : tag,
                           .MPI_ERROR = MPI_SUCCESS,
                           ._ucount = bytes};
  return MPI_SUCCESS;
}
