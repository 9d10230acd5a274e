/* Every environment variable the library reads (src/config/env.c).
 *
 * DC_ENV_LIST is the one list: nothing else in src/ calls getenv(). Code asks
 * by id (dc_env_int(DC_ENV_SOCKETS)); each call reads the environment again,
 * so a test may setenv() between calls. docs/configuration.md's "Environment
 * variables" table matches this list (tests/unit/test_env.c checks it). The
 * tools (distcomm-launch, distcomm-config) read a few variables of their own
 * (DISTCOMM_SSH, DISTCOMM_MPIRUN): they are not the library's.
 *
 * How each kind reads a value (a value that does not parse, or is out of
 * range, gives the default, as an unset variable does):
 *   TEXT    as is; dc_env_str() is NULL when unset. The default says what
 *           happens then; the user of the value checks it.
 *   FLAG    on when set, non-empty and not starting with '0'.
 *   SWITCH  "1" on, "0" off, anything else the default: "1", "0" or
 *           "auto" (dc_env_flag() returns -1).
 *   COUNT   the leading decimal integer, as atoll() reads it, in [lo, hi].
 *   NUMBER  the whole text a decimal integer (strtoll, base 10) in [lo, hi].
 *   SECONDS the whole text a number (strtod) greater than 0.
 * dc_env_str() gives any variable's raw text. */
#ifndef DC_CONFIG_ENV_H
#define DC_CONFIG_ENV_H

#include <stddef.h>

/* X(id, name, kind, default, lo, hi, meaning) */
#define DC_ENV_LIST(X)                                                         \
  X(RANK, "MLX_RANK", TEXT, "unset", 0, 0,                                     \
    "this process's rank, 0-based (the ring backend; with MLX_HOSTFILE)")      \
  X(HOSTFILE, "MLX_HOSTFILE", TEXT, "unset", 0, 0,                             \
    "path of the address file: JSON, each rank's ip:port list (the ring; "     \
    "with MLX_RANK)")                                                          \
  X(DC_RANK, "DISTCOMM_RANK", TEXT, "unset", 0, 0,                             \
    "MLX_RANK under another name (when MLX_RANK is unset): distcomm-launch "   \
    "--mlx sets it, so that MLX's own ring does not take the job")             \
  X(DC_HOSTFILE, "DISTCOMM_HOSTFILE", TEXT, "unset", 0, 0,                     \
    "MLX_HOSTFILE under another name (when MLX_HOSTFILE is unset; "            \
    "distcomm-launch --mlx)")                                                  \
  X(RING_VERBOSE, "MLX_RING_VERBOSE", FLAG, "0", 0, 0,                         \
    "log connections and failures to stderr (as DISTCOMM_VERBOSE)")            \
  X(VERBOSE, "DISTCOMM_VERBOSE", FLAG, "0", 0, 0,                              \
    "log connections and failures to stderr")                                  \
  /* DISTCOMM_TIMEOUT also bounds a trickle: no op waits longer than the       \
   * timeout without 64 KiB/s. Once bytes move, each timeout window must       \
   * bring 64 KiB a second of it on average (engine.c, MIN_RATE): far          \
   * below any link, even under valgrind, far above a peer that sends a        \
   * byte now and then to keep a wait alive. */                                \
  X(TIMEOUT, "DISTCOMM_TIMEOUT", SECONDS, "300", 0, 0,                         \
    "seconds a wait may see no progress before DC_ERR_TIMEOUT; no op waits "   \
    "longer than this without 64 KiB/s (a trickling peer times out too)")      \
  X(WAIT_NOTE, "DISTCOMM_WAIT_NOTE", SECONDS, "5", 0, 0,                       \
    "start-up: after this many seconds of waiting (for ranks, the "            \
    "coordinator, its port), one line on stderr says what for; then one "      \
    "every 30 s")                                                              \
  X(JOB_ID, "DISTCOMM_JOB_ID", TEXT, "a hash of the address file", 0, 0,       \
    "job id in hex, set by the launcher: two jobs never cross-connect")        \
  X(JOB_TOKEN, "DISTCOMM_JOB_TOKEN", TEXT, "unset (no proof asked)", 0, 0,     \
    "per-job secret that peers prove they hold, set by the launcher")          \
  X(JOB_TOKEN_FILE, "DISTCOMM_JOB_TOKEN_FILE", TEXT, "unset", 0, 0,            \
    "a file (mode 600, ours) whose first line is the job token, when "         \
    "DISTCOMM_JOB_TOKEN is unset")                                             \
  X(SECURE, "DISTCOMM_SECURE", TEXT, "0", 0, 0,                                \
    "1 or auth: every frame on TCP carries a MAC under a per-connection key "  \
    "from the job token (needs a token; nothing is encrypted)")                \
  X(INSECURE, "DISTCOMM_INSECURE", SWITCH, "0", 0, 0,                          \
    "1: a job without a token lets in anyone who reaches its addresses "       \
    "(0: only this host's processes of this user, one host only)")             \
  X(SOCKETS, "DISTCOMM_SOCKETS", COUNT, "2", 1, 16,                            \
    "TCP connections per address (1 to 16; unset: 1 when "                     \
    "more than 16 ranks share one IP address; alike on every rank)")           \
  X(RING_NEIGHBOURS, "DISTCOMM_RING_NEIGHBOURS", SWITCH, "0", 0, 0,            \
    "1: connect ring neighbours only, as MLX's ring does")                     \
  X(SHM, "DISTCOMM_SHM", SWITCH, "1", 0, 0,                                    \
    "0: ranks on one host talk over TCP instead of shared memory (and "        \
    "connect over TCP, not Unix sockets)")                                     \
  X(CMA, "DISTCOMM_CMA", SWITCH, "auto", 0, 0,                                 \
    "single copy (process_vm_readv) for large collectives on one host: "       \
    "0 never, 1 always (when set so on every rank), auto: the faster, timed "  \
    "per op and size")                                                         \
  X(HIER, "DISTCOMM_HIER", SWITCH, "auto", 0, 0,                               \
    "all_reduce on several hosts with the same number (2 or more) of ranks "   \
    "each: inside each host, then one ring per local rank across hosts, "      \
    "then inside again: 0 never, 1 always, auto: from DISTCOMM_HIER_BYTES")    \
  X(HIER_BYTES, "DISTCOMM_HIER_BYTES", COUNT, "65536", 0,                      \
    4611686018427387904LL,                                                     \
    "DISTCOMM_HIER=auto: the smallest all_reduce (bytes) that goes "           \
    "hierarchical")                                                            \
  X(DIRECT_RANKS, "DISTCOMM_DIRECT_RANKS", COUNT, "32", 1, 1073741824,         \
    "small all_reduce and barrier: groups of up to this many ranks exchange "  \
    "with every rank at once (when that sends at most 64 KiB per rank); "      \
    "larger ones take log2 rounds of one exchange (recursive doubling)")       \
  X(MPI_LIBNAME, "MLX_MPI_LIBNAME", TEXT,                                      \
    "libmpi.so.40, libmpich.so.12, libmpi.so.12", 0, 0,                        \
    "the MPI library to load (the MPI backend)")                               \
  X(MPI_PIECE, "DISTCOMM_MPI_PIECE", COUNT, "1073741824", 16, 1073741824,      \
    "most elements or bytes one MPI call moves (tests make it small)")         \
  X(OMPI_RANK, "OMPI_COMM_WORLD_RANK", TEXT, "unset", 0, 0,                    \
    "set by Open MPI's mpirun: the rank with a coordinator, else the PMIx "    \
    "start applies (MPI when asked for by name)")                              \
  X(OMPI_SIZE, "OMPI_COMM_WORLD_SIZE", NUMBER, "-1", 0, 1073741823,            \
    "world size Open MPI's mpirun announces (-1: unknown)")                    \
  X(PMI_RANK, "PMI_RANK", TEXT, "unset", 0, 0,                                 \
    "set by a PMI launcher (MPICH's hydra): the rank with a coordinator, "     \
    "else the MPI backend applies")                                            \
  X(PMI_SIZE, "PMI_SIZE", NUMBER, "-1", 0, 1073741823,                         \
    "world size a PMI launcher announces (-1: unknown)")                       \
  X(PMIX_RANK, "PMIX_RANK", TEXT, "unset", 0, 0,                               \
    "set by a PMIx server (mpirun, prterun, srun --mpi=pmix): with "           \
    "PMIX_NAMESPACE, the PMIx bootstrap applies")                              \
  X(PMIX_NAMESPACE, "PMIX_NAMESPACE", TEXT, "unset", 0, 0,                     \
    "set by a PMIx server: the job's name; with PMIX_RANK, \"any\" starts "    \
    "through PMIx on distcomm's transport")                                    \
  X(PMIX_LIBNAME, "DISTCOMM_PMIX_LIBNAME", TEXT, "libpmix.so.2", 0, 0,         \
    "the PMIx library to load (the PMIx bootstrap)")                           \
  X(SLURM_PROCID, "SLURM_PROCID", TEXT, "unset", 0, 0,                         \
    "set by srun (with SLURM_NTASKS): the rank with a coordinator, else the "  \
    "MPI backend applies")                                                     \
  X(SLURM_NTASKS, "SLURM_NTASKS", NUMBER, "-1", 0, 1073741823,                 \
    "world size srun announces (-1: unknown)")                                 \
  X(SLURM_STEP_NODELIST, "SLURM_STEP_NODELIST", TEXT, "unset", 0, 0,           \
    "srun's hosts (n[1-3,7]): with SLURM_PROCID and no coordinator set, rank " \
    "0 runs the coordinator on the first")                                     \
  X(SLURM_JOB_ID, "SLURM_JOB_ID", TEXT, "unset", 0, 0,                         \
    "with SLURM_STEP_ID, the coordinator's port under srun: 20000 + "          \
    "(SLURM_JOB_ID x 64 + SLURM_STEP_ID) mod 10000")                           \
  X(SLURM_STEP_ID, "SLURM_STEP_ID", TEXT, "0", 0, 0,                           \
    "srun's step number: part of the coordinator's port")                      \
  X(PET_NNODES, "PET_NNODES", TEXT, "unset", 0, 0,                             \
    "Kubernetes training operators: the number of nodes (pods); world size = " \
    "PET_NNODES x PET_NPROC_PER_NODE")                                         \
  X(PET_NPROC_PER_NODE, "PET_NPROC_PER_NODE", TEXT, "1", 0, 0,                 \
    "with PET_NNODES: processes per node")                                     \
  X(PET_NODE_RANK, "PET_NODE_RANK", TEXT, "JOB_COMPLETION_INDEX", 0, 0,        \
    "with PET_NNODES: this node's number; rank = PET_NODE_RANK x "             \
    "PET_NPROC_PER_NODE + LOCAL_RANK")                                         \
  X(LOCAL_RANK, "LOCAL_RANK", TEXT, "0 when PET_NPROC_PER_NODE is 1", 0, 0,    \
    "with PET_NNODES: this process's number on its node")                      \
  X(PET_MASTER_ADDR, "PET_MASTER_ADDR", TEXT, "unset", 0, 0,                   \
    "Kubernetes training operators' coordinator host (with PET_MASTER_PORT), " \
    "when no address above is set")                                            \
  X(PET_MASTER_PORT, "PET_MASTER_PORT", TEXT, "unset", 0, 0,                   \
    "Kubernetes training operators' coordinator port")                         \
  X(JOB_COMPLETION_INDEX, "JOB_COMPLETION_INDEX", TEXT, "unset", 0, 0,         \
    "a Kubernetes Indexed Job's pod number: the node rank with PET_NNODES, "   \
    "else the rank (after the rank variables above)")                          \
  X(BACKEND, "DISTCOMM_BACKEND", TEXT, "unset", 0, 0,                          \
    "the backend dc_init(\"any\") means (mpi, ring, pmix, mesh, ...); unset: " \
    "the first whose variables are set, never MPI under PMIx or from "         \
    "Slurm's variables alone")                                                 \
  X(JACCL_COORDINATOR, "MLX_JACCL_COORDINATOR", TEXT, "unset", 0, 0,           \
    "ip:port where rank 0 runs the rendezvous (MLX's JACCL name)")             \
  X(COORDINATOR, "DISTCOMM_COORDINATOR", TEXT, "unset", 0, 0,                  \
    "host:port where rank 0 runs the rendezvous (when MLX_JACCL_COORDINATOR "  \
    "is unset)")                                                               \
  X(MASTER_ADDR, "MASTER_ADDR", TEXT, "unset", 0, 0,                           \
    "torchrun's rendezvous host (with MASTER_PORT), when neither of the two "  \
    "above is set")                                                            \
  X(MASTER_PORT, "MASTER_PORT", TEXT, "unset", 0, 0,                           \
    "torchrun's rendezvous port (with MASTER_ADDR)")                           \
  X(WORLD_SIZE_MLX, "MLX_WORLD_SIZE", NUMBER, "-1", 1, 1073741823,             \
    "world size with a coordinator (else WORLD_SIZE, SLURM_NTASKS, "           \
    "OMPI_COMM_WORLD_SIZE, PMI_SIZE)")                                         \
  X(TORCH_RANK, "RANK", TEXT, "unset", 0, 0,                                   \
    "torchrun's rank: with a coordinator, when MLX_RANK is unset")             \
  X(TORCH_WORLD_SIZE, "WORLD_SIZE", NUMBER, "-1", 1, 1073741823,               \
    "torchrun's world size: with a coordinator, when MLX_WORLD_SIZE is unset") \
  X(IFNAME, "DISTCOMM_IFNAME", TEXT,                                           \
    "the interface that routes to the "                                        \
    "coordinator",                                                             \
    0, 0,                                                                      \
    "with a coordinator: the interfaces (comma-separated) a rank listens on")  \
  X(IBV_DEVICES, "MLX_IBV_DEVICES", TEXT, "unset", 0, 0,                       \
    "the mesh (jaccl): path of the N x N device matrix (or the JSON itself); " \
    "each name is the interface that reaches that peer")                       \
  X(JACCL_RING, "MLX_JACCL_RING", FLAG, "0", 0, 0,                             \
    "1: the mesh connects ring neighbours only and runs the ring algorithms "  \
    "(jaccl-ring)")

typedef enum dc_env_id {
#define DC_ENV_ID_(id, name, kind, def, lo, hi, meaning) DC_ENV_##id,
  DC_ENV_LIST(DC_ENV_ID_)
#undef DC_ENV_ID_
      DC_ENV_COUNT
} dc_env_id;

typedef enum dc_env_kind {
  DC_ENV_KIND_TEXT,
  DC_ENV_KIND_FLAG,
  DC_ENV_KIND_SWITCH,
  DC_ENV_KIND_COUNT,
  DC_ENV_KIND_NUMBER,
  DC_ENV_KIND_SECONDS,
} dc_env_kind;

typedef struct dc_env_var {
  const char *name;
  dc_env_kind kind;
  const char *def;     /* the default, as docs/configuration.md shows it */
  long long lo, hi;    /* COUNT and NUMBER: the accepted range */
  const char *meaning; /* one line */
} dc_env_var;

/* The list's entry for id; NULL for an id out of range. */
const dc_env_var *dc_env_info(dc_env_id id);

/* The raw text of any variable; NULL when unset. */
const char *dc_env_str(dc_env_id id);

/* FLAG and SWITCH: 1 on, 0 off, -1 for a SWITCH whose default is "auto". */
int dc_env_flag(dc_env_id id);

/* COUNT and NUMBER: the value, or the default. */
long long dc_env_int(dc_env_id id);

/* SECONDS: the value, or the default. */
double dc_env_double(dc_env_id id);

/* MLX_RANK, else DISTCOMM_RANK (NULL when neither); *name: which. */
const char *dc_env_rank(const char **name);
/* MLX_HOSTFILE, else DISTCOMM_HOSTFILE (NULL when neither). */
const char *dc_env_hostfile(void);

/* MLX_RING_VERBOSE or DISTCOMM_VERBOSE is on. */
int dc_env_verbose(void);

/* DISTCOMM_TIMEOUT, or 300 s. */
double dc_default_timeout(void);

#endif
