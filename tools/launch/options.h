/* Command-line options of distcomm-launch (mlx.launch). */
#ifndef DCL_OPTIONS_H
#define DCL_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#define DCL_MAX_RANKS 4096

struct dcl_options {
  long nranks; /* -n / --repeat-hosts */
  const char
      *backend;      /* "ring" or a mesh name (our ranks), or "mpi" (mpirun) */
  bool backend_set;  /* --backend given (else a hostfile's "backend" counts) */
  bool no_verify;    /* --no-verify-script */
  const char **envs; /* "K=V" strings from --env, pointing into argv */
  size_t n_envs;
  long starting_port; /* 0: pick free ports */
  long conns_per_ip;  /* addresses (= parallel connections) per rank */
  const char *cwd;    /* --cwd, or NULL to stay where we are */
  bool verbose;
  bool tag_output;
  bool keep_going; /* --keep-going: a rank's failure does not stop the rest */
  bool bind_core;  /* --bind-to core: each rank on a CPU of its own */
  char **command;  /* NULL-terminated, points into argv */
  const char **mpi_args; /* --mpi-arg values (mpi only), pointing into argv */
  size_t n_mpi_args;
  const char *hosts;    /* --hosts */
  const char *hostfile; /* --hostfile (MLX's JSON) */
  const char *python;   /* --python: runs a .py command (default python3) */
  bool print_python;    /* --print-python */
  long nccl_port;       /* --nccl-port (nccl only, which is refused) */
  bool mlx; /* --mlx: MLX's mpi backend over distcomm (DISTCOMM_RANK, ...) */
  const char *mlx_face; /* --mlx: libdistcomm-ompi.so's path, set in main */
};

/* What the caller should do after parsing. */
enum dcl_parse_result {
  DCL_PARSE_RUN,          /* options are valid: launch */
  DCL_PARSE_HELP,         /* --help was printed: exit 0 */
  DCL_PARSE_BAD,          /* an error and a hint were printed: exit 2 */
  DCL_PARSE_PRINT_PYTHON, /* --print-python: print o->python's path, exit */
};

/* For a backend of MLX's that distcomm cannot run (nccl): what is missing,
 * as a phrase; NULL for any other name. */
const char *dcl_backend_missing(const char *name);

/* mesh, jaccl or jaccl-ring: our ranks over the mesh backend. */
bool dcl_backend_is_mesh(const char *name);

/* --mlx: the absolute path of libdistcomm-ompi.so beside this launcher
 * (build tree: ../libdistcomm-ompi.so; install tree: ../LIBDIR/), written
 * to out; -1 when neither exists. */
int dcl_mlx_face(char *out, size_t n);

enum dcl_parse_result dcl_parse_options(int argc, char **argv,
                                        struct dcl_options *o);
void dcl_options_free(struct dcl_options *o);

#endif
