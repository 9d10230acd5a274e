/* dc_init: pick a backend from the environment, keep one world group. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/env.h"
#include "core/group.h"

static pthread_mutex_t world_lock = PTHREAD_MUTEX_INITIALIZER;
static dc_group *world;

/* The backends "any" tries, in order. Each returns DC_ERR_UNAVAILABLE,
 * with the reason in dc_last_error(), when its configuration is absent. */
typedef struct backend_entry {
  const char *name;
  dc_status (*init)(dc_group **out);
  int alias; /* another name of an entry above: "any" skips it */
} backend_entry;

static const backend_entry backends[] = {
    {"mesh", dc_mesh_init, 0},  /* MLX_IBV_DEVICES + a coordinator */
    {"jaccl", dc_mesh_init, 1}, /* MLX's name for the mesh */
    {"jaccl-ring", dc_mesh_ring_init, 1},
    {"ring", dc_ring_init, 0},       /* MLX_RANK + MLX_HOSTFILE */
    {"ring", dc_ring_coord_init, 0}, /* a coordinator + rank + size */
    {"ring", dc_ring_pmix_init, 0},  /* a PMIx server: mpirun, srun */
    {"pmix", dc_ring_pmix_init, 1},  /* the same, by name */
    {"mpi", dc_mpi_init, 0},         /* started by mpiexec (PMI) */
};
#define NBACKENDS (sizeof backends / sizeof backends[0])

static dc_status singleton(dc_group **out) {
  *out = dc_group_new(&dc_single_ops, NULL, 0, 1, 0);
  return *out ? DC_OK : dc_init_fail(DC_ERR_NOMEM, "init: out of memory");
}

/* Started by an MPI launcher without PMIx (MPICH's hydra): under a PMIx
 * server "any" is distcomm's own transport, and MPI is taken by name only
 * (DISTCOMM_BACKEND=mpi). Slurm's variables alone never pick MPI (plain
 * srun has no PMI, and Open MPI would abort). */
static int mpi_launched(void) {
  static const dc_env_id ids[] = {DC_ENV_OMPI_RANK, DC_ENV_PMI_RANK};
  if (dc_pmix_server())
    return 0;
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    const char *s = dc_env_str(ids[i]);
    if (s && *s)
      return 1;
  }
  return 0;
}

/* An sbatch script's own process: Slurm gives it SLURM_PROCID=0 and the
 * job's SLURM_NTASKS, but only srun sets SLURM_STEP_NODELIST. It is one
 * process: a group of one, with a word on how to start the ranks. */
static int batch_script(const char *ntasks) {
  const char *id = dc_env_str(DC_ENV_SLURM_PROCID);
  const char *list = dc_env_str(DC_ENV_SLURM_STEP_NODELIST);
  if (!ntasks || strtol(ntasks, NULL, 10) < 2 || !id || strcmp(id, "0") != 0 ||
      (list && *list))
    return 0;
  fprintf(stderr,
          "[distcomm] SLURM_NTASKS=%s but no SLURM_STEP_NODELIST: "
          "this is the batch script's own process, a group of one "
          "(start the ranks with srun)\n",
          ntasks);
  return 1;
}

/* The first world size above 1 in the environment, with how to reach the
 * other ranks; NULL when none (a group of one is then right). */
static const char *wanted_world(const char **name, const char **value) {
  static const struct {
    dc_env_id id;
    const char *hint;
  } vars[] = {
      {DC_ENV_WORLD_SIZE_MLX, "set DISTCOMM_COORDINATOR (or MLX_HOSTFILE)"},
      {DC_ENV_TORCH_WORLD_SIZE, "set MASTER_ADDR and MASTER_PORT"},
      {DC_ENV_PET_NNODES, "set PET_MASTER_ADDR and PET_MASTER_PORT"},
      {DC_ENV_OMPI_SIZE, "the MPI backend could not start"},
      {DC_ENV_PMI_SIZE, "the MPI backend could not start"},
      {DC_ENV_SLURM_NTASKS, "SLURM_STEP_NODELIST is unset: start the ranks "
                            "with srun, or set DISTCOMM_COORDINATOR"},
  };
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *s = dc_env_str(vars[i].id);
    if (vars[i].id == DC_ENV_SLURM_NTASKS && batch_script(s))
      continue;
    if (s && strtol(s, NULL, 10) > 1) {
      *name = dc_env_info(vars[i].id)->name, *value = s;
      return vars[i].hint;
    }
  }
  return NULL;
}

/* Try each backend named (or all for "any"); keep every reason so that a
 * strict failure says what each backend was missing. */
static dc_status make_world(const char *name, int strict, dc_group **out) {
  int any = strcmp(name, "any") == 0, tried = 0;
  char why[1024] = "", pmix_why[600] = ""; /* PMIx's own failure, whole */
  for (size_t i = 0; i < NBACKENDS; i++) {
    if (any ? backends[i].alias : strcmp(name, backends[i].name) != 0)
      continue;
    if (any && backends[i].init == dc_mpi_init && !mpi_launched())
      continue;
    if (any && backends[i].init == dc_ring_pmix_init && !dc_pmix_server())
      continue; /* nothing to say: keeps the reasons that matter short */
    tried = 1;
    dc_status st = backends[i].init(out);
    if (st != DC_ERR_UNAVAILABLE)
      return st;
    size_t n = strlen(why);
    snprintf(why + n, sizeof why - n, "%s%s", n ? "; " : "", dc_last_error());
    if (backends[i].init == dc_ring_pmix_init && dc_pmix_server())
      snprintf(pmix_why, sizeof pmix_why, "%s", dc_last_error());
  }
  if (!tried)
    return dc_init_fail(DC_ERR_UNAVAILABLE,
                        "init: backend \"%s\" is not available (this build "
                        "has: any, mesh, jaccl, jaccl-ring, ring, pmix, mpi)",
                        name);
  const char *var, *value, *hint = any ? wanted_world(&var, &value) : NULL;
  if (hint && pmix_why[0]) /* the one reason that matters under PMIx */
    return dc_init_fail(DC_ERR_CONFIG,
                        "%s (%s=%s asks for more than one process, and "
                        "PMIx was the way to reach the others)",
                        pmix_why, var, value);
  if (hint) /* asked for several ranks: a group of one would be wrong */
    return dc_init_fail(DC_ERR_CONFIG,
                        "init: %s=%s asks for more than one process, but "
                        "there is no way to reach the others: %s (%s)",
                        var, value, hint, why);
  if (strict)
    return dc_init_fail(DC_ERR_UNAVAILABLE, "%s", why);
  return singleton(out); /* nothing configured: a group of one, like MLX */
}

/* DISTCOMM_BACKEND names what "any" means (e.g. mpi under srun --mpi=pmix). */
static const char *chosen(const char *backend) {
  const char *env = dc_env_str(DC_ENV_BACKEND);
  if (backend && strcmp(backend, "any") != 0)
    return backend;
  return env && *env ? env : "any";
}

dc_status dc_init(const char *backend, int strict, dc_group **group) {
  if (!group)
    return dc_init_fail(DC_ERR_INVALID, "init: group is NULL");
  *group = NULL;
  pthread_mutex_lock(&world_lock);
  dc_status st = DC_OK;
  if (!world) {
    st = make_world(chosen(backend), strict, &world);
    if (st == DC_OK)
      world->is_world = 1; /* dc_group_new gave it our one reference */
  } else {
    world->refs++;
  }
  if (st == DC_OK)
    *group = world;
  pthread_mutex_unlock(&world_lock);
  return st;
}

void dc_group_free(dc_group *g) {
  if (!g)
    return;
  if (g->is_world) {
    pthread_mutex_lock(&world_lock);
    int last = --g->refs == 0;
    if (last)
      world = NULL;
    pthread_mutex_unlock(&world_lock);
    if (!last)
      return;
  }
  dc_inflight_release(g); /* waits for requests in flight */
  g->ops->destroy(g);
  free(g);
}
