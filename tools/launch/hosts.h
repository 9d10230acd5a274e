/* Where the ranks run: --hosts / --hostfile turned into one host per rank,
 * in MLX's order (each host repeated -n times, one after the other). */
#ifndef DCL_HOSTS_H
#define DCL_HOSTS_H

#include <stdbool.h>
#include <stddef.h>

#include "options.h"

struct dcl_host {
  char *ssh;  /* the name given to ssh ("user@name" allowed) */
  char **ips; /* the rank's addresses for the ring, as text */
  size_t n_ips;
  bool local; /* 127.0.0.1, ::1 or localhost: started without ssh */
  char *rdma; /* the host's "rdma" row (the mesh's devices) as JSON, or NULL */
};

struct dcl_plan {
  struct dcl_host *ranks; /* one entry per rank (a host repeated -n times) */
  long nranks;
  char **envs; /* the hostfile's "envs" ("K=V") */
  size_t n_envs;
  char *backend; /* the hostfile's "backend", or NULL */
  bool all_local;
  bool resolve;       /* a host without "ips" gets its name's address */
  bool backend_set;   /* --backend given: the file's "backend" is not used */
  char *mesh_envs[2]; /* --backend mesh/jaccl(-ring): MLX_IBV_DEVICES=...,
                         MLX_JACCL_RING=1 */
  size_t n_mesh_envs;
};

/* Builds the plan from --hosts or --hostfile (and -n). Returns 0, or -1
 * after printing what is wrong with the list or the file. */
int dcl_plan_build(const struct dcl_options *o, struct dcl_plan *p);

/* The same parser for mpirun's hosts (--backend mpi): one entry per host as
 * listed, names not resolved, no "ips" needed. text: the --hostfile's JSON
 * (already read), or NULL for --hosts. Returns 0, or -1 after printing why. */
int dcl_plan_hosts(const struct dcl_options *o, const char *text,
                   struct dcl_plan *p);

/* --backend mesh, jaccl or jaccl-ring: the device matrix every rank gets
 * (MLX_IBV_DEVICES=[[...],...]) from the hosts' "rdma" rows, one rank per
 * host; for a job on this machine without rows, "lo" between every pair.
 * Unless --env already gives MLX_IBV_DEVICES. Returns 0, or -1 after
 * printing what is missing. */
int dcl_plan_mesh(const struct dcl_options *o, struct dcl_plan *p);

void dcl_plan_free(struct dcl_plan *p);

#endif
