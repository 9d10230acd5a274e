/* Where the ranks run: --hosts / --hostfile turned into one host per rank,
 * in MLX's order (each host repeated -n times, one after the other). */
#ifndef DCL_HOSTS_H
#define DCL_HOSTS_H

#include <stdbool.h>
#include <stddef.h>

#include "options.h"

struct dcl_host {
    char *ssh;        /* the name given to ssh ("user@name" allowed) */
    char **ips;       /* the rank's addresses for the ring, as text */
    size_t n_ips;
    bool local;       /* 127.0.0.1, ::1 or localhost: started without ssh */
};

struct dcl_plan {
    struct dcl_host *ranks; /* one entry per rank (a host repeated -n times) */
    long nranks;
    char **envs;            /* the hostfile's "envs" ("K=V") */
    size_t n_envs;
    char *backend;          /* the hostfile's "backend", or NULL */
    bool all_local;
    bool resolve;           /* a host without "ips" gets its name's address */
    bool backend_set;       /* --backend given: the file's "backend" is not used */
};

/* Builds the plan from --hosts or --hostfile (and -n). Returns 0, or -1
 * after printing what is wrong with the list or the file. */
int dcl_plan_build(const struct dcl_options *o, struct dcl_plan *p);

/* The same parser for mpirun's hosts (--backend mpi): one entry per host as
 * listed, names not resolved, no "ips" needed. text: the --hostfile's JSON
 * (already read), or NULL for --hosts. Returns 0, or -1 after printing why. */
int dcl_plan_hosts(const struct dcl_options *o, const char *text, struct dcl_plan *p);

void dcl_plan_free(struct dcl_plan *p);

#endif
