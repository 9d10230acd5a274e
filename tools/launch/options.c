/* Our own small parser instead of getopt_long: the command's own options
 * must never be taken for ours, and every error must be one clear line. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, mkstemps, strsignal, sigabbrev_np */
#endif
#include "options.h"

#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

enum opt_id {
  OPT_N,
  OPT_BACKEND,
  OPT_ENV,
  OPT_PORT,
  OPT_CONNS,
  OPT_CWD,
  OPT_VERBOSE,
  OPT_TAG,
  OPT_KEEP_GOING,
  OPT_BIND_TO,
  OPT_HELP,
  OPT_HOSTS,
  OPT_HOSTFILE,
  OPT_NO_VERIFY,
  OPT_MPI_ARG,
  OPT_PRINT_PYTHON,
  OPT_PYTHON,
  OPT_NCCL_PORT,
  OPT_MLX,
};

struct opt_def {
  const char *name; /* long name without "--" */
  char short_name;  /* 0 when there is none */
  bool has_value;
  enum opt_id id;
};

static const struct opt_def OPTS[] = {
    {"repeat-hosts", 'n', true, OPT_N},
    {"backend", 0, true, OPT_BACKEND},
    {"env", 0, true, OPT_ENV},
    {"starting-port", 'p', true, OPT_PORT},
    {"connections-per-ip", 0, true, OPT_CONNS},
    {"cwd", 0, true, OPT_CWD},
    {"verbose", 0, false, OPT_VERBOSE},
    {"tag-output", 0, false, OPT_TAG},
    {"keep-going", 0, false, OPT_KEEP_GOING},
    {"bind-to", 0, true, OPT_BIND_TO},
    {"help", 'h', false, OPT_HELP},
    {"hosts", 0, true, OPT_HOSTS},
    {"hostfile", 0, true, OPT_HOSTFILE},
    {"no-verify-script", 0, false, OPT_NO_VERIFY},
    {"mpi-arg", 0, true, OPT_MPI_ARG},
    {"print-python", 0, false, OPT_PRINT_PYTHON},
    {"python", 0, true, OPT_PYTHON},
    {"nccl-port", 0, true, OPT_NCCL_PORT},
    {"mlx", 0, false, OPT_MLX},
};
#define N_OPTS (sizeof OPTS / sizeof OPTS[0])

static void print_usage(FILE *f) {
  fprintf(
      f,
      "usage: " DCL_PROG " [options] [--] command [args...]\n"
      "\n"
      "Starts the ranks of a distributed program (like mlx.launch): N on this "
      "machine,\n"
      "or N on each of --hosts / the --hostfile's hosts over ssh. Gives each "
      "the ring\n"
      "backend's configuration (MLX_RANK, MLX_HOSTFILE, MLX_WORLD_SIZE, "
      "DISTCOMM_JOB_ID)\n"
      "and torchrun's (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, "
      "LOCAL_RANK,\n"
      "LOCAL_WORLD_SIZE), forwards their output, broadcasts\n"
      "stdin to all of them and stops the whole job, on every host, as soon "
      "as one\n"
      "rank fails (unless --keep-going) or on Ctrl-C.\n"
      "With --backend mpi it runs mpirun instead, which starts and watches the "
      "ranks.\n"
      "\n"
      "options:\n"
      "  -n, --repeat-hosts N      ranks on each host (default 1; without "
      "--hosts or\n"
      "                            --hostfile: N ranks on this machine)\n"
      "  --hosts H1,H2,...         run over ssh on these hosts, host by host "
      "(rank 0..N-1\n"
      "                            on H1, ...); each name is also the rank's "
      "ring address.\n"
      "                            127.0.0.1/localhost: started here, without "
      "ssh\n"
      "  --hostfile FILE           a hosts file (MLX's JSON; not the address "
      "list of\n"
      "                            MLX_HOSTFILE): [{\"ssh\": NAME, \"ips\": "
      "[IP...]}, ...]\n"
      "                            or {\"backend\": B, \"envs\": [...], "
      "\"hosts\": [...]};\n"
      "                            a host's \"ips\" are its ranks' "
      "addresses, \"envs\"\n"
      "                            are set in every rank, \"backend\" is used "
      "unless\n"
      "                            --backend is given\n"
      "  --backend NAME            ring (default), mpi (runs mpirun), or mesh "
      "(MLX's\n"
      "                            jaccl: every pair over its own link, the "
      "hostfile's\n"
      "                            \"rdma\" rows as MLX_IBV_DEVICES; without "
      "--hosts or\n"
      "                            --hostfile, over the loopback) or "
      "jaccl-ring (ring\n"
      "                            neighbours only); MLX's nccl is refused\n"
      "  --env K=V                 set K=V in every rank (repeatable)\n"
      "  -p, --starting-port P     rank r's i-th address gets port P+r*K+i "
      "(default:\n"
      "                            free ports: here by binding them, on remote "
      "hosts\n"
      "                            from a random base past the ports in use "
      "there)\n"
      "  --connections-per-ip K    addresses (parallel connections) per rank "
      "(default 1)\n"
      "  --cwd DIR                 run the ranks in DIR (remote default: the "
      "current\n"
      "                            directory when it exists there, else the "
      "home)\n"
      "  --tag-output              prefix every output line with \"[rank] \"\n"
      "  --keep-going              a rank that exits badly or is killed does "
      "not stop the\n"
      "                            others (for programs that shrink their "
      "group); the\n"
      "                            exit status is the survivors'\n"
      "  --bind-to core|none       core: each rank on a CPU of its own, as "
      "Open MPI does\n"
      "                            (when a host's ranks fit its CPUs); "
      "default none\n"
      "  --verbose                 log what the launcher does; sets "
      "MLX_RING_VERBOSE=1\n"
      "  --no-verify-script        do not check that the command exists on "
      "every host\n"
      "                            before starting (hosts are still checked "
      "reachable)\n"
      "  --mpi-arg ARG             mpi only: pass ARG to mpirun (repeatable; "
      "split at\n"
      "                            spaces, e.g. --mpi-arg '--mca "
      "btl_tcp_if_include eth0')\n"
      "  --python PY               run a .py command with PY (default "
      "python3; from a venv's\n"
      "                            bin, that venv's python3)\n"
      "  --print-python            print the path of that python and exit\n"
      "  --nccl-port P             nccl only (MLX's flag; accepted, nccl is "
      "refused)\n"
      "  --mlx                     run an unchanged MLX program on distcomm: "
      "sets\n"
      "                            MLX_MPI_LIBNAME to libdistcomm-ompi.so and "
      "names the\n"
      "                            ring's variables DISTCOMM_RANK, "
      "DISTCOMM_HOSTFILE\n"
      "                            (not MLX_RANK/MLX_HOSTFILE, so MLX's own "
      "ring stays\n"
      "                            out): mx.distributed.init() then takes "
      "its mpi backend\n"
      "  -h, --help                show this help\n"
      "\n"
      "A command ending in .py that is not executable is run with --python's "
      "python.\n"
      "Remote hosts: the ssh command is $DISTCOMM_SSH (default \"ssh\", split "
      "at spaces,\n"
      "e.g. \"ssh -F my_config\"), always with -o BatchMode=yes -o "
      "ConnectTimeout=5: a\n"
      "password prompt is an error, not a wait. Every host needs key-based "
      "ssh, the\n"
      "command, and distcomm-launch (at this one's path or on the PATH of ssh\n"
      "sessions). Each host's agent stops its ranks when it hears no heartbeat "
      "from\n"
      "here for 20 intervals ($DISTCOMM_HEARTBEAT_MS, default 1000).\n"
      "With --backend mpi, --hosts/--hostfile (JSON or an MPI hostfile)\n"
      "go to mpirun as \"host slots=N\" lines.\n"
      "Exit status: 0 when every rank succeeds; otherwise the failing rank's "
      "status\n"
      "(128+signal when it was killed); 130/143 on SIGINT/SIGTERM; 2 on bad "
      "usage;\n"
      "before starting remote ranks: 255 when a host cannot be reached over "
      "ssh, 127\n"
      "when the command (or distcomm-launch) is missing on a host. With "
      "--keep-going:\n"
      "a status a rank exited with itself, else 0 when a rank finished.\n");
}

static enum dcl_parse_result bad(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* Prints the one-line error and the hint; the caller exits with status 2. */
static enum dcl_parse_result bad(const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dcl_error("%s", msg);
  fprintf(stderr, "Try '" DCL_PROG " --help' for more information.\n");
  return DCL_PARSE_BAD;
}

static bool valid_env_name(const char *kv, const char *eq) {
  if (eq == kv || (kv[0] >= '0' && kv[0] <= '9'))
    return false;
  for (const char *c = kv; c < eq; c++) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              (*c >= '0' && *c <= '9') || *c == '_';
    if (!ok)
      return false;
  }
  return true;
}

const char *dcl_backend_missing(const char *name) {
  if (strcmp(name, "nccl") == 0)
    return "distcomm has no NCCL backend (it needs libnccl and CUDA GPUs)";
  return NULL;
}

bool dcl_backend_is_mesh(const char *name) {
  return strcmp(name, "jaccl") == 0 || strcmp(name, "jaccl-ring") == 0 ||
         strcmp(name, "mesh") == 0;
}

static enum dcl_parse_result set_backend(struct dcl_options *o, const char *v) {
  if (strcmp(v, "ring") == 0 || strcmp(v, "mpi") == 0 ||
      dcl_backend_is_mesh(v)) {
    o->backend = v;
    o->backend_set = true;
    return DCL_PARSE_RUN;
  }
  const char *missing = dcl_backend_missing(v);
  if (missing != NULL) { /* a real backend, not a typo: no usage hint */
    dcl_error("--backend %s: %s; use --backend ring or mpi", v, missing);
    return DCL_PARSE_BAD;
  }
  return bad(
      "unknown backend '%s' (expected ring, mpi, mesh, jaccl or jaccl-ring)",
      v);
}

static enum dcl_parse_result add_env(struct dcl_options *o, const char *v) {
  const char *eq = strchr(v, '=');
  if (eq == NULL)
    return bad("--env '%s' is not of the form K=V", v);
  if (!valid_env_name(v, eq))
    return bad("--env '%s': the name must be letters, digits and '_'", v);
  const char **grown = realloc(o->envs, (o->n_envs + 1) * sizeof *grown);
  if (grown == NULL)
    return bad("out of memory");
  o->envs = grown;
  o->envs[o->n_envs++] = v;
  return DCL_PARSE_RUN;
}

static enum dcl_parse_result add_mpi_arg(struct dcl_options *o, const char *v) {
  const char **grown =
      realloc(o->mpi_args, (o->n_mpi_args + 1) * sizeof *grown);
  if (grown == NULL)
    return bad("out of memory");
  o->mpi_args = grown;
  o->mpi_args[o->n_mpi_args++] = v;
  return DCL_PARSE_RUN;
}

static enum dcl_parse_result number(const char *flag, const char *v, long lo,
                                    long hi, long *out) {
  if (dcl_parse_long(v, lo, hi, out) == 0)
    return DCL_PARSE_RUN;
  return bad("%s: '%s' is not an integer from %ld to %ld", flag, v, lo, hi);
}

static enum dcl_parse_result apply(struct dcl_options *o,
                                   const struct opt_def *d, const char *v) {
  switch (d->id) {
  case OPT_N:
    return number("-n", v, 1, DCL_MAX_RANKS, &o->nranks);
  case OPT_BACKEND:
    return set_backend(o, v);
  case OPT_ENV:
    return add_env(o, v);
  case OPT_PORT:
    return number("--starting-port", v, 1, 65535, &o->starting_port);
  case OPT_CONNS:
    return number("--connections-per-ip", v, 1, 64, &o->conns_per_ip);
  case OPT_CWD:
    o->cwd = v;
    return DCL_PARSE_RUN;
  case OPT_VERBOSE:
    o->verbose = true;
    return DCL_PARSE_RUN;
  case OPT_TAG:
    o->tag_output = true;
    return DCL_PARSE_RUN;
  case OPT_KEEP_GOING:
    o->keep_going = true;
    return DCL_PARSE_RUN;
  case OPT_BIND_TO: /* Open MPI's spelling; only what a rank per CPU needs */
    if (strcmp(v, "core") != 0 && strcmp(v, "none") != 0)
      return bad("--bind-to '%s': give core or none", v);
    o->bind_core = strcmp(v, "core") == 0;
    return DCL_PARSE_RUN;
  case OPT_HELP:
    print_usage(stdout);
    return DCL_PARSE_HELP;
  case OPT_HOSTS:
    o->hosts = v;
    return DCL_PARSE_RUN;
  case OPT_HOSTFILE:
    o->hostfile = v;
    return DCL_PARSE_RUN;
  case OPT_MPI_ARG:
    return add_mpi_arg(o, v);
  case OPT_NO_VERIFY:
    o->no_verify = true;
    return DCL_PARSE_RUN;
  case OPT_PRINT_PYTHON:
    o->print_python = true;
    return DCL_PARSE_RUN;
  case OPT_PYTHON:
    o->python = v;
    return DCL_PARSE_RUN;
  case OPT_NCCL_PORT:
    return number("--nccl-port", v, 1, 65535, &o->nccl_port);
  case OPT_MLX:
    o->mlx = true;
    return DCL_PARSE_RUN;
  }
  return DCL_PARSE_BAD;
}

static const struct opt_def *find_long(const char *name, size_t len) {
  for (size_t i = 0; i < N_OPTS; i++)
    if (strlen(OPTS[i].name) == len && strncmp(OPTS[i].name, name, len) == 0)
      return &OPTS[i];
  return NULL;
}

static const struct opt_def *find_short(char c) {
  for (size_t i = 0; i < N_OPTS; i++)
    if (OPTS[i].short_name == c)
      return &OPTS[i];
  return NULL;
}

/* Handles argv[*i] (an option); advances *i past a separate value. */
static enum dcl_parse_result parse_one(struct dcl_options *o, int argc,
                                       char **argv, int *i) {
  const char *arg = argv[*i];
  const struct opt_def *d;
  const char *inline_val = NULL;
  if (arg[1] == '-') {
    const char *eq = strchr(arg + 2, '=');
    size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
    d = find_long(arg + 2, len);
    inline_val = eq ? eq + 1 : NULL;
    if (d != NULL && !d->has_value && eq != NULL)
      return bad("option '--%s' takes no value", d->name);
  } else {
    if (strcmp(arg, "-np") == 0) /* mpirun's spelling of -n */
      return bad("-n: 'p' is not an integer from 1 to %d; did you mean -n %s?",
                 DCL_MAX_RANKS, *i + 1 < argc ? argv[*i + 1] : "N");
    d = find_short(arg[1]);
    if (d != NULL && arg[2] != '\0')
      inline_val = d->has_value ? arg + 2 : NULL;
    if (d != NULL && arg[2] != '\0' && !d->has_value)
      d = NULL;
  }
  if (d == NULL)
    return bad("unknown option '%s'", arg);
  if (!d->has_value)
    return apply(o, d, NULL);
  if (inline_val == NULL) {
    if (*i + 1 >= argc)
      return bad("option '%s' needs a value", arg);
    inline_val = argv[++*i];
  }
  return apply(o, d, inline_val);
}

static enum dcl_parse_result check_hosts(const struct dcl_options *o) {
  bool mpi = strcmp(o->backend, "mpi") == 0;
  if (o->hosts != NULL && o->hostfile != NULL)
    return bad("give --hosts or --hostfile, not both");
  if (!mpi && o->n_mpi_args > 0 && (o->backend_set || o->hostfile == NULL))
    return bad("--mpi-arg needs --backend mpi");
  if (mpi && o->mlx)
    return bad("--mlx runs MLX on distcomm's own ranks; --backend mpi runs "
               "mpirun (MLX on Open MPI): give one of them");
  return DCL_PARSE_RUN;
}

static enum dcl_parse_result check_ports(const struct dcl_options *o) {
  long count = o->nranks * o->conns_per_ip;
  if (o->starting_port != 0 && o->starting_port + count - 1 > 65535) {
    return bad("--starting-port %ld: the last port would be %ld (> 65535)",
               o->starting_port, o->starting_port + count - 1);
  }
  if (count > 16384)
    return bad(
        "-n times --connections-per-ip is too large (at most 16384 ports)");
  return DCL_PARSE_RUN;
}

/* mlx.launch runs a .py with its own sys.executable. The same here: a
 * launcher installed in a venv (pip install .; pyvenv.cfg one folder up)
 * runs .py commands with that venv's python3, which has distcomm and numpy
 * even when the venv is not activated; elsewhere python3 from PATH. */
static const char *default_python(void) {
  static char py[4096];
  char bin[4096], cfg[4200];
  ssize_t n = readlink("/proc/self/exe", bin, sizeof bin - 1);
  if (n <= 0)
    return "python3";
  bin[n] = '\0';
  char *slash = strrchr(bin, '/');
  if (slash == NULL)
    return "python3";
  *slash = '\0'; /* <venv>/bin */
  if (snprintf(cfg, sizeof cfg, "%s/../pyvenv.cfg", bin) >= (int)sizeof cfg ||
      snprintf(py, sizeof py, "%s/python3", bin) >= (int)sizeof py ||
      access(cfg, R_OK) != 0 || access(py, X_OK) != 0)
    return "python3";
  return py;
}

enum dcl_parse_result dcl_parse_options(int argc, char **argv,
                                        struct dcl_options *o) {
  memset(o, 0, sizeof *o);
  o->nranks = 1;
  o->backend = "ring";
  o->conns_per_ip = 1;
  o->python = default_python();
  o->nccl_port = 12345;
  int i = 1;
  for (; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--") == 0) {
      i++;
      break;
    }
    if (arg[0] != '-' || arg[1] == '\0')
      break; /* the command starts here */
    enum dcl_parse_result r = parse_one(o, argc, argv, &i);
    if (r != DCL_PARSE_RUN)
      return r;
  }
  if (o->print_python) /* as mlx.launch: nothing else is needed */
    return DCL_PARSE_PRINT_PYTHON;
  if (i >= argc)
    return bad("no command given (usage: " DCL_PROG
               " [options] -- command ...)");
  o->command = argv + i;
  dcl_verbose = o->verbose;
  if (check_hosts(o) != DCL_PARSE_RUN)
    return DCL_PARSE_BAD;
  return check_ports(o);
}

void dcl_options_free(struct dcl_options *o) {
  free(o->envs);
  o->envs = NULL;
  o->n_envs = 0;
  free(o->mpi_args);
  o->mpi_args = NULL;
  o->n_mpi_args = 0;
}

/* Where the face is, from where we are: the build tree keeps libraries one
 * folder above bin/, the install tree in LIBDIR beside bin/. */
int dcl_mlx_face(char *out, size_t n) {
  char exe[PATH_MAX], path[PATH_MAX + 64], real[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0)
    return -1;
  exe[len] = '\0';
  const char *dir = dirname(exe);
  static const char *const rel[] = {"..", "../" DCL_FACE_LIBDIR};
  for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
    snprintf(path, sizeof path, "%s/%s/libdistcomm-ompi.so", dir, rel[i]);
    if (realpath(path, real) != NULL && access(real, R_OK) == 0 &&
        strlen(real) < n) {
      snprintf(out, n, "%s", real);
      return 0;
    }
  }
  return -1;
}
