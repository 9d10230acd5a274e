/* The MPI world group: find the launcher, load libmpi, start MPI, and end
 * it when the last MPI group is freed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/mpi/mpi_backend.h"
#include "config/env.h"
#include "backends/mpi/mpi_types.h"

/* MPI's life cycle is per process, groups come and go: the world may be
 * freed before its subgroups, so MPI ends with the last communicator. */
static pthread_mutex_t life_lock = PTHREAD_MUTEX_INITIALIZER;
static int live;       /* communicators held by groups */
static int we_started; /* we called MPI_Init_thread (so we finalize) */
static int ended;      /* we finalized: MPI cannot start again */

/* ---- the launcher ----------------------------------------------------- */

typedef struct launcher {
  const char *what;   /* for messages */
  const char *prefer; /* "ompi" or "mpich": which library to try first */
  int size;           /* world size it announces, -1 when unknown */
} launcher;

/* Each launcher leaves its own variables in every rank's environment. */
static int find_launcher(launcher *l) {
  if (dc_env_str(DC_ENV_OMPI_RANK))
    *l = (launcher){"Open MPI's mpirun (OMPI_COMM_WORLD_SIZE)", "ompi",
                    (int)dc_env_int(DC_ENV_OMPI_SIZE)};
  else if (dc_env_str(DC_ENV_PMI_RANK))
    *l = (launcher){"a PMI launcher such as MPICH's hydra (PMI_SIZE)", "mpich",
                    (int)dc_env_int(DC_ENV_PMI_SIZE)};
  else if (dc_env_str(DC_ENV_PMIX_RANK))
    *l = (launcher){"a PMIx launcher (PMIX_RANK)", "ompi", -1};
  else if (dc_env_str(DC_ENV_SLURM_PROCID) && dc_env_str(DC_ENV_SLURM_NTASKS))
    *l = (launcher){"srun (SLURM_NTASKS)", "ompi",
                    (int)dc_env_int(DC_ENV_SLURM_NTASKS)};
  else
    return 0;
  return 1;
}

/* ---- starting and ending MPI ------------------------------------------ */

static void end_mpi(void) {
  int done = 0;
  dc_MPI_Finalized(&done);
  if (done)
    return;
  dc_mpi_types_free();
  if (we_started) {
    dc_MPI_Finalize();
    ended = 1;
    we_started = 0;
  }
}

static dc_status init_error(int rc, const char *call) {
  char msg[1024] = "";
  int len = 0;
  if (dc_MPI_Error_string(rc, msg, &len) != 0 || len <= 0)
    snprintf(msg, sizeof msg, "MPI error %d", rc);
  return dc_init_fail(DC_ERR_SYSTEM, "mpi: %s failed: %s", call, msg);
}

/* MPI_THREAD_MULTIPLE: different groups may be used from different threads
 * at once. An application that started MPI itself keeps its own level. */
static dc_status start_mpi(void) {
  int on = 0, provided = 0, rc = 0;
  const char *call = "MPI_Initialized";
  if ((rc = dc_MPI_Initialized(&on)) != 0)
    return init_error(rc, call);
  if (!on) {
    call = "MPI_Init_thread";
    if ((rc = dc_MPI_Init_thread(dc_mpi.k.thread_multiple, &provided)) != 0)
      return init_error(rc, call);
    we_started = 1;
    /* Ours now: failures outside a communicator return too. */
    dc_MPI_Comm_set_errhandler(dc_mpi.k.comm_world, dc_mpi.k.errors_return);
  }
  if ((rc = dc_mpi_types_create(&call)) != 0) {
    dc_status st = init_error(rc, call);
    end_mpi();
    return st;
  }
  return DC_OK;
}

int dc_mpi_wrap(mpi_h comm, uint64_t id, dc_group **out) {
  int rank = 0, size = 0, rc;
  mpi_impl *M = malloc(sizeof *M);
  if ((rc = dc_MPI_Comm_set_errhandler(comm, dc_mpi.k.errors_return)) ||
      (rc = dc_MPI_Comm_rank(comm, &rank)) ||
      (rc = dc_MPI_Comm_size(comm, &size)) || !M) {
    free(M);
    dc_MPI_Comm_free(&comm);
    return rc ? rc : -1;
  }
  M->comm = comm;
  *out = dc_group_new(&dc_mpi_ops, M, rank, size, id);
  if (!*out) {
    dc_MPI_Comm_free(&M->comm);
    free(M);
    return -1;
  }
  pthread_mutex_lock(&life_lock);
  live++;
  pthread_mutex_unlock(&life_lock);
  return 0;
}

static dc_status world_group(const launcher *l, dc_group **out) {
  mpi_h comm = 0;
  int rc = dc_MPI_Comm_dup(dc_mpi.k.comm_world, &comm);
  if (rc)
    return init_error(rc, "MPI_Comm_dup(MPI_COMM_WORLD)");
  rc = dc_mpi_wrap(comm, 0x4d5049ull, out); /* "MPI" */
  if (rc == -1)
    return dc_init_fail(DC_ERR_NOMEM, "mpi: out of memory");
  if (rc)
    return init_error(rc, "setting up the world communicator");
  if (l->size > 0 && (*out)->size != l->size) {
    int sz = (*out)->size;
    dc_group_free(*out);
    *out = NULL;
    return dc_init_fail(DC_ERR_CONFIG,
                        "mpi: %s started %d processes but %s sees a world of "
                        "%d: the library does not belong to that launcher "
                        "(set MLX_MPI_LIBNAME)",
                        l->what, l->size, dc_mpi.name, sz);
  }
  return DC_OK;
}

dc_status dc_mpi_init(dc_group **out) {
  *out = NULL;
  launcher l;
  char why[1024];
  if (!find_launcher(&l))
    return dc_init_fail(DC_ERR_UNAVAILABLE,
                        "mpi: not started by an MPI launcher (mpirun, "
                        "mpiexec, srun: none of OMPI_COMM_WORLD_RANK, "
                        "PMI_RANK, PMIX_RANK, SLURM_PROCID is set)");
  if (l.size >= 0 && l.size <= 1)
    return dc_init_fail(DC_ERR_UNAVAILABLE,
                        "mpi: %s started a world of %d process: nothing to "
                        "connect",
                        l.what, l.size);
  if (ended)
    return dc_init_fail(DC_ERR_NOT_SUPPORTED,
                        "mpi: MPI was finalized when the last MPI group was "
                        "freed; MPI cannot start twice in one process");
  dc_status st = dc_mpi_load(l.prefer, why, sizeof why);
  if (st != DC_OK)
    return dc_init_fail(st, "%s", why);
  dc_mpi_piece = (size_t)dc_env_int(DC_ENV_MPI_PIECE);
  pthread_mutex_lock(&life_lock);
  st = live == 0 ? start_mpi() : DC_OK;
  pthread_mutex_unlock(&life_lock);
  if (st == DC_OK)
    st = world_group(&l, out);
  if (st != DC_OK) {
    pthread_mutex_lock(&life_lock);
    if (live == 0)
      end_mpi(); /* a failed start leaves MPI ended, not half up */
    pthread_mutex_unlock(&life_lock);
    return st;
  }
  int level = 0;
  dc_MPI_Query_thread(&level);
  dc_log(*out, "mpi: %s (%s ABI, %s), rank %d of %d, thread level %d",
         dc_mpi.name, dc_mpi.abi == MPI_ABI_OMPI ? "Open MPI" : "MPICH",
         dc_mpi.version, (*out)->rank, (*out)->size, level);
  return DC_OK;
}

/* ---- split and free --------------------------------------------------- */

dc_status dc_mpi_split_all(dc_group *g, int color, int key, dc_group **out) {
  mpi_h comm = 0;
  /* key < 0 keeps the parent's order: MPI breaks ties by parent rank. */
  int rc = dc_MPI_Comm_split(((mpi_impl *)g->impl)->comm,
                             color < 0 ? dc_mpi.k.undefined : color,
                             key < 0 ? g->rank : key, &comm);
  if (rc)
    return dc_mpi_fail(g, "MPI_Comm_split", rc);
  if (comm == dc_mpi.k.comm_null)
    return DC_OK; /* DC_UNDEFINED: no group */
  uint64_t id = (g->id * 0x9E3779B97F4A7C15ull) ^ g->seq ^ (uint64_t)color;
  rc = dc_mpi_wrap(comm, id, out);
  if (rc == -1)
    return dc_fail(g, DC_ERR_NOMEM, "no memory for a group");
  if (rc)
    return dc_mpi_fail(g, "MPI_Comm_size", rc);
  (*out)->timeout_s = g->timeout_s;
  (*out)->verbose = g->verbose;
  return DC_OK;
}

void dc_mpi_destroy(dc_group *g) {
  mpi_impl *M = g->impl;
  if (!M)
    return;
  pthread_mutex_lock(&life_lock);
  int done = 0;
  dc_MPI_Finalized(&done); /* an application may have ended MPI itself */
  if (!done)
    dc_MPI_Comm_free(&M->comm);
  if (--live == 0)
    end_mpi();
  pthread_mutex_unlock(&life_lock);
  free(M);
}
