/* The MPI backend's table: each op is one MPI call (or one per piece when
 * the count does not fit MPI's int). group.c has already checked the
 * arguments and handled groups of one. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/mpi/mpi_backend.h"
#include "backends/mpi/mpi_types.h"

size_t dc_mpi_piece = (size_t)1 << 30;

static mpi_h comm_of(dc_group *g) { return ((mpi_impl *)g->impl)->comm; }

dc_status dc_mpi_fail(dc_group *g, const char *call, int rc) {
  char msg[1024] = ""; /* MPICH's MPI_MAX_ERROR_STRING is 512 */
  int len = 0;
  if (dc_MPI_Error_string(rc, msg, &len) != 0 || len <= 0)
    snprintf(msg, sizeof msg, "MPI error %d", rc);
  return dc_fail(g, DC_ERR_SYSTEM, "%s failed: %s", call, msg);
}

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

static dc_status mpi_all_reduce(dc_group *g, const void *send, void *recv,
                                size_t count, dc_dtype dtype, dc_op op) {
  mpi_h type, mop;
  dc_mpi_reduce_kind(dtype, op, &type, &mop);
  size_t es = dc_dtype_size(dtype);
  for (size_t off = 0; off < count; off += dc_mpi_piece) {
    int n = (int)min_sz(dc_mpi_piece, count - off);
    const void *s =
        send == recv ? dc_mpi.k.in_place : (const char *)send + off * es;
    int rc =
        dc_MPI_Allreduce(s, (char *)recv + off * es, n, type, mop, comm_of(g));
    if (rc)
      return dc_mpi_fail(g, "MPI_Allreduce", rc);
  }
  return DC_OK;
}

static dc_status bcast_bytes(dc_group *g, void *buf, size_t bytes, int root) {
  for (size_t off = 0; off < bytes; off += dc_mpi_piece) {
    int n = (int)min_sz(dc_mpi_piece, bytes - off);
    int rc =
        dc_MPI_Bcast((char *)buf + off, n, dc_mpi.k.byte, root, comm_of(g));
    if (rc)
      return dc_mpi_fail(g, "MPI_Bcast", rc);
  }
  return DC_OK;
}

/* Every rank's block through MPI_Allgather when it fits an int, else one
 * broadcast per rank, piece by piece (only above 1 GiB per rank). A send
 * buffer inside recv (in place) is first moved to this rank's block. */
static dc_status mpi_all_gather(dc_group *g, const void *send, void *recv,
                                size_t count, dc_dtype dtype) {
  size_t bytes = count * dc_dtype_size(dtype);
  char *mine = (char *)recv + (size_t)g->rank * bytes;
  const char *s = send;
  int inside = s >= (char *)recv && s < (char *)recv + (size_t)g->size * bytes;
  if (inside && s != mine)
    memmove(mine, s, bytes);
  if (bytes <= dc_mpi_piece) {
    int rc = dc_MPI_Allgather(inside ? dc_mpi.k.in_place : send, (int)bytes,
                              dc_mpi.k.byte, recv, (int)bytes, dc_mpi.k.byte,
                              comm_of(g));
    return rc ? dc_mpi_fail(g, "MPI_Allgather", rc) : DC_OK;
  }
  if (!inside)
    memcpy(mine, send, bytes);
  for (int r = 0; r < g->size; r++) {
    dc_status st = bcast_bytes(g, (char *)recv + (size_t)r * bytes, bytes, r);
    if (st != DC_OK)
      return st;
  }
  return DC_OK;
}

/* Above the piece size: one MPI_Reduce per rank (rank r's block to r), in
 * pieces. In place (send == recv), recv overlaps block 0 only, which the
 * first reduce has consumed before this rank's own block is moved there. */
static dc_status reduce_blocks(dc_group *g, const void *send, void *recv,
                               size_t count, dc_dtype dtype, dc_op op) {
  mpi_h type, mop;
  dc_mpi_reduce_kind(dtype, op, &type, &mop);
  size_t es = dc_dtype_size(dtype);
  for (int r = 0; r < g->size; r++) {
    const char *blk = (const char *)send + (size_t)r * count * es;
    int me = r == g->rank, in_place = me && send == recv;
    if (in_place && r != 0)
      memmove(recv, blk, count * es);
    for (size_t off = 0; off < count; off += dc_mpi_piece) {
      int n = (int)min_sz(dc_mpi_piece, count - off);
      const void *s = in_place ? dc_mpi.k.in_place : blk + off * es;
      int rc = dc_MPI_Reduce(s, me ? (char *)recv + off * es : NULL, n, type,
                             mop, r, comm_of(g));
      if (rc)
        return dc_mpi_fail(g, "MPI_Reduce", rc);
    }
  }
  return DC_OK;
}

/* MPI_Reduce_scatter_block: in place, MPI reads the whole input from recv
 * and leaves this rank's block at its start, which is our send == recv. */
static dc_status mpi_reduce_scatter(dc_group *g, const void *send, void *recv,
                                    size_t count, dc_dtype dtype, dc_op op) {
  if (count * (size_t)g->size > dc_mpi_piece)
    return reduce_blocks(g, send, recv, count, dtype, op);
  mpi_h type, mop;
  dc_mpi_reduce_kind(dtype, op, &type, &mop);
  int rc = dc_MPI_Reduce_scatter_block(send == recv ? dc_mpi.k.in_place : send,
                                       recv, (int)count, type, mop, comm_of(g));
  return rc ? dc_mpi_fail(g, "MPI_Reduce_scatter_block", rc) : DC_OK;
}

static dc_status mpi_broadcast(dc_group *g, void *buf, size_t count,
                               dc_dtype dtype, int root) {
  return bcast_bytes(g, buf, count * dc_dtype_size(dtype), root);
}

/* Pieces of one message keep their order: MPI does not overtake messages
 * between the same pair on the same communicator and tag. */
static dc_status mpi_send(dc_group *g, const void *buf, size_t count,
                          dc_dtype dtype, int dst) {
  size_t bytes = count * dc_dtype_size(dtype), off = 0;
  do {
    int n = (int)min_sz(dc_mpi_piece, bytes - off);
    int rc = dc_MPI_Send((const char *)buf + off, n, dc_mpi.k.byte, dst, 0,
                         comm_of(g));
    if (rc)
      return dc_mpi_fail(g, "MPI_Send", rc);
    off += (size_t)n;
  } while (off < bytes);
  return DC_OK;
}

static dc_status mpi_recv(dc_group *g, void *buf, size_t count, dc_dtype dtype,
                          int src) {
  size_t bytes = count * dc_dtype_size(dtype), off = 0;
  do {
    int n = (int)min_sz(dc_mpi_piece, bytes - off);
    int rc =
        dc_MPI_Recv((char *)buf + off, n, dc_mpi.k.byte, src, 0, comm_of(g));
    if (rc)
      return dc_mpi_fail(g, "MPI_Recv", rc);
    off += (size_t)n;
  } while (off < bytes);
  return DC_OK;
}

static dc_status mpi_barrier(dc_group *g) {
  int rc = dc_MPI_Barrier(comm_of(g));
  return rc ? dc_mpi_fail(g, "MPI_Barrier", rc) : DC_OK;
}

/* ---- all_to_all(v), gather, scatter, reduce_to ----------------------- */

/* In bytes as MPI_BYTE: every count and offset must fit MPI's int. */
static dc_status too_big(dc_group *g, const char *call, size_t bytes) {
  return dc_fail(g, DC_ERR_NOT_SUPPORTED,
                 "%zu bytes do not fit %s's int counts (MPI backend)", bytes,
                 call);
}

static dc_status mpi_all_to_allv(dc_group *g, const void *send,
                                 const size_t *scnt, const size_t *soff,
                                 void *recv, const size_t *rcnt,
                                 const size_t *roff, dc_dtype dtype) {
  size_t n = (size_t)g->size, es = dc_dtype_size(dtype);
  int *v = malloc(4 * n * sizeof *v);
  if (!v)
    return dc_fail(g, DC_ERR_NOMEM, "no memory for %zu counts", 4 * n);
  for (size_t q = 0; q < n; q++) {
    size_t a[4] = {scnt[q] * es, soff[q] * es, rcnt[q] * es, roff[q] * es};
    for (int i = 0; i < 4; i++) {
      if (a[i] > INT_MAX) {
        free(v);
        return too_big(g, "MPI_Alltoallv", a[i]);
      }
      v[(size_t)i * n + q] = (int)a[i];
    }
  }
  int rc = dc_MPI_Alltoallv(send, v, v + n, dc_mpi.k.byte, recv, v + 2 * n,
                            v + 3 * n, dc_mpi.k.byte, comm_of(g));
  free(v);
  return rc ? dc_mpi_fail(g, "MPI_Alltoallv", rc) : DC_OK;
}

static dc_status mpi_all_to_all(dc_group *g, const void *send, void *recv,
                                size_t count, dc_dtype dtype) {
  size_t n = (size_t)g->size;
  size_t *v = malloc(2 * n * sizeof *v);
  if (!v)
    return dc_fail(g, DC_ERR_NOMEM, "no memory for %zu offsets", 2 * n);
  for (size_t q = 0; q < n; q++)
    v[q] = count, v[n + q] = q * count;
  dc_status st = mpi_all_to_allv(g, send, v, v + n, recv, v, v + n, dtype);
  free(v);
  return st;
}

static dc_status mpi_gather(dc_group *g, const void *send, void *recv,
                            size_t count, dc_dtype dtype, int root) {
  size_t bytes = count * dc_dtype_size(dtype);
  if (bytes * (size_t)g->size > INT_MAX)
    return too_big(g, "MPI_Gather", bytes * (size_t)g->size);
  int rc = dc_MPI_Gather(send, (int)bytes, dc_mpi.k.byte, recv, (int)bytes,
                         dc_mpi.k.byte, root, comm_of(g));
  return rc ? dc_mpi_fail(g, "MPI_Gather", rc) : DC_OK;
}

static dc_status mpi_scatter(dc_group *g, const void *send, void *recv,
                             size_t count, dc_dtype dtype, int root) {
  size_t bytes = count * dc_dtype_size(dtype);
  if (bytes * (size_t)g->size > INT_MAX)
    return too_big(g, "MPI_Scatter", bytes * (size_t)g->size);
  int rc = dc_MPI_Scatter(send, (int)bytes, dc_mpi.k.byte, recv, (int)bytes,
                          dc_mpi.k.byte, root, comm_of(g));
  return rc ? dc_mpi_fail(g, "MPI_Scatter", rc) : DC_OK;
}

static dc_status mpi_reduce_to(dc_group *g, const void *send, void *recv,
                               size_t count, dc_dtype dtype, dc_op op,
                               int root) {
  mpi_h type, mop;
  dc_mpi_reduce_kind(dtype, op, &type, &mop);
  size_t es = dc_dtype_size(dtype);
  int me = g->rank == root, in_place = me && send == recv;
  for (size_t off = 0; off < count; off += dc_mpi_piece) {
    int n = (int)min_sz(dc_mpi_piece, count - off);
    const void *s =
        in_place ? dc_mpi.k.in_place : (const char *)send + off * es;
    int rc = dc_MPI_Reduce(s, me ? (char *)recv + off * es : NULL, n, type, mop,
                           root, comm_of(g));
    if (rc)
      return dc_mpi_fail(g, "MPI_Reduce", rc);
  }
  return DC_OK;
}

/* No poison hook: MPI has no way to tell peers, and its launcher stops the
 * job when a rank dies. */
const dc_backend_ops dc_mpi_ops = {
    .name = "mpi",
    .all_reduce = mpi_all_reduce,
    .all_gather = mpi_all_gather,
    .reduce_scatter = mpi_reduce_scatter,
    .send = mpi_send,
    .recv = mpi_recv,
    .broadcast = mpi_broadcast,
    .barrier = mpi_barrier,
    .all_to_allv = mpi_all_to_allv,
    .all_to_all = mpi_all_to_all,
    .gather = mpi_gather,
    .scatter = mpi_scatter,
    .reduce_to = mpi_reduce_to,
    .split_all = dc_mpi_split_all,
    .destroy = dc_mpi_destroy,
};
