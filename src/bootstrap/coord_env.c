/* Where the coordinator is, who we are, and which addresses to listen on:
 * the variables users already have, first found wins.
 *   address: MLX_JACCL_COORDINATOR, DISTCOMM_COORDINATOR,
 *            MASTER_ADDR + MASTER_PORT (torchrun),
 *            PET_MASTER_ADDR + PET_MASTER_PORT (Kubernetes operators),
 *            srun's first host (SLURM_STEP_NODELIST) at a port from
 *            SLURM_JOB_ID and SLURM_STEP_ID
 *   rank:    MLX_RANK, DISTCOMM_RANK, RANK,
 *            PET_NODE_RANK x PET_NPROC_PER_NODE + LOCAL_RANK,
 *            OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID,
 *            JOB_COMPLETION_INDEX
 *   size:    MLX_WORLD_SIZE, WORLD_SIZE, PET_NNODES x PET_NPROC_PER_NODE,
 *            OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS
 * An MPI launcher's variables come before Slurm's: mpirun inside an
 * allocation starts its daemons with srun, whose SLURM_PROCID is the
 * daemon's, not the rank's. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/coordinator.h"
#include "config/env.h"
#include "config/nodelist.h"
#include "core/group.h"
#include "transport/sock.h"

static const dc_env_id rank_head[] = {DC_ENV_RANK, DC_ENV_DC_RANK,
                                      DC_ENV_TORCH_RANK};
static const dc_env_id rank_tail[] = {DC_ENV_OMPI_RANK, DC_ENV_PMI_RANK,
                                      DC_ENV_SLURM_PROCID,
                                      DC_ENV_JOB_COMPLETION_INDEX};
static const dc_env_id size_head[] = {DC_ENV_WORLD_SIZE_MLX,
                                      DC_ENV_TORCH_WORLD_SIZE};
static const dc_env_id size_tail[] = {DC_ENV_OMPI_SIZE, DC_ENV_PMI_SIZE,
                                      DC_ENV_SLURM_NTASKS};
#define NVARS(a) (sizeof a / sizeof a[0])

static int set(dc_env_id id) {
  const char *s = dc_env_str(id);
  return s && *s;
}

/* "host:port" from a pair of variables (torchrun's, the operators'); NULL
 * when neither is set, or only one (err says which). */
static const char *pair(dc_env_id hid, dc_env_id pid, const char *from,
                        char *buf, size_t n, char *err, size_t errlen) {
  const char *h = dc_env_str(hid), *p = dc_env_str(pid);
  const char *hn = dc_env_info(hid)->name, *pn = dc_env_info(pid)->name;
  if (set(hid) && set(pid)) {
    snprintf(buf, n, strchr(h, ':') && h[0] != '[' ? "[%s]:%s" : "%s:%s", h, p);
    return buf;
  }
  if (set(hid) || set(pid))
    snprintf(err, errlen, "%s is set but %s is not: %s sets both",
             set(hid) ? hn : pn, set(hid) ? pn : hn, from);
  return NULL;
}

/* Without a token only one host's processes may join (protected mode):
 * a step on several hosts is refused now, not after the timeout. */
static int slurm_hosts_ok(const char *list, long hosts, char *err,
                          size_t errlen) {
  if (hosts < 2 || set(DC_ENV_JOB_TOKEN) || set(DC_ENV_JOB_TOKEN_FILE) ||
      dc_env_flag(DC_ENV_INSECURE) == 1)
    return 1;
  snprintf(err, errlen,
           "srun started this job on %ld hosts (SLURM_STEP_NODELIST=%s) but "
           "it has no DISTCOMM_JOB_TOKEN: without one only one host's "
           "processes may join; set DISTCOMM_JOB_TOKEN_FILE to a file (mode "
           "600) every host reads, or DISTCOMM_INSECURE=1 on a trusted "
           "network",
           hosts, list);
  return 0;
}

/* Under srun without a coordinator: the step's first host, at
 * 20000 + (SLURM_JOB_ID x 64 + SLURM_STEP_ID) mod 10000 (below the kernel's
 * ephemeral ports; steps and jobs side by side get different ports). */
static const char *slurm_text(char *buf, size_t n, char *err, size_t errlen) {
  const char *list = dc_env_str(DC_ENV_SLURM_STEP_NODELIST);
  if (!set(DC_ENV_SLURM_PROCID) || !list || !*list || dc_pmix_server())
    return NULL; /* srun --mpi=pmix: the PMIx bootstrap (pmix.c) */
  char host[256], why[400];
  long hosts = 0, job = 0, step = 0;
  const char *sid = dc_env_str(DC_ENV_SLURM_STEP_ID);
  if (dc_nodelist_host(list, 0, host, sizeof host, &hosts, why, sizeof why)) {
    snprintf(err, errlen, "SLURM_STEP_NODELIST: %s", why);
    return NULL;
  }
  if (!set(DC_ENV_SLURM_JOB_ID)) {
    snprintf(err, errlen,
             "SLURM_STEP_NODELIST is set but SLURM_JOB_ID is not: the "
             "coordinator's port comes from it (or set DISTCOMM_COORDINATOR)");
    return NULL;
  }
  if (dc_env_parse_int("SLURM_JOB_ID", dc_env_str(DC_ENV_SLURM_JOB_ID), &job,
                       err, errlen) ||
      (sid && *sid &&
       dc_env_parse_int("SLURM_STEP_ID", sid, &step, err, errlen)) ||
      !slurm_hosts_ok(list, hosts, err, errlen))
    return NULL;
  long port =
      20000 + (long)(((unsigned long)job * 64 + (unsigned long)step) % 10000);
  snprintf(buf, n, "%s:%ld", host, port);
  return buf;
}

/* The coordinator's "host:port" text and the variable it came from; NULL
 * when none is set (or err says what is wrong). */
static const char *address_text(char *buf, size_t n, const char **from,
                                char *err, size_t errlen) {
  const char *s = dc_env_str(DC_ENV_JACCL_COORDINATOR);
  if (s && *s)
    return *from = "MLX_JACCL_COORDINATOR", s;
  s = dc_env_str(DC_ENV_COORDINATOR);
  if (s && *s)
    return *from = "DISTCOMM_COORDINATOR", s;
  *from = "MASTER_ADDR/MASTER_PORT";
  s = pair(DC_ENV_MASTER_ADDR, DC_ENV_MASTER_PORT, "torchrun", buf, n, err,
           errlen);
  if (s || err[0])
    return s;
  *from = "PET_MASTER_ADDR/PET_MASTER_PORT";
  s = pair(DC_ENV_PET_MASTER_ADDR, DC_ENV_PET_MASTER_PORT,
           "a training operator", buf, n, err, errlen);
  if (s || err[0])
    return s;
  *from = "SLURM_STEP_NODELIST/SLURM_JOB_ID";
  return slurm_text(buf, n, err, errlen);
}

/* "ip:port" numerically, else "name:port" through the resolver. */
static dc_status resolve(const char *text, const char *from, dc_addr *a,
                         char *err, size_t errlen) {
  char why[160];
  if (dc_addr_parse(text, 0, a, why, sizeof why) == DC_OK)
    return DC_OK;
  char host[256];
  const char *colon = strrchr(text, ':');
  size_t hl = colon ? (size_t)(colon - text) : 0;
  if (!colon || hl == 0 || hl >= sizeof host || !colon[1] ||
      strlen(text) >= sizeof a->text) {
    snprintf(err, errlen, "%s='%s' is not host:port", from, text);
    return DC_ERR_CONFIG;
  }
  memcpy(host, text, hl);
  host[hl] = '\0';
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
  int rc = getaddrinfo(host, colon + 1, &hints, &res);
  if (rc != 0 || !res || res->ai_addrlen > sizeof a->sa) {
    snprintf(err, errlen, "%s='%s': cannot resolve %s: %s", from, text, host,
             rc ? gai_strerror(rc) : "no address");
    if (res)
      freeaddrinfo(res);
    return DC_ERR_CONFIG;
  }
  memset(a, 0, sizeof *a);
  memcpy(&a->sa, res->ai_addr, res->ai_addrlen);
  a->salen = res->ai_addrlen;
  memcpy(a->text, text, strlen(text) + 1); /* fits: checked above */
  freeaddrinfo(res);
  return DC_OK;
}

/* The first of vars that is set: its value through dc_env_parse_int. */
static dc_status first_int(const dc_env_id *vars, size_t n, long *out,
                           const char **name, char *err, size_t errlen) {
  for (size_t i = 0; i < n; i++) {
    const char *s = dc_env_str(vars[i]);
    if (s && *s) {
      *name = dc_env_info(vars[i])->name;
      return dc_env_parse_int(*name, s, out, err, errlen);
    }
  }
  *name = NULL;
  return DC_OK;
}

/* A count variable (torchrun's elastic "1:4" and "auto" are not counts). */
static dc_status pet_int(dc_env_id id, long *v, char *err, size_t errlen) {
  const char *name = dc_env_info(id)->name, *s = dc_env_str(id);
  if (strchr(s, ':')) {
    snprintf(err, errlen,
             "%s='%s' is an elastic range: distcomm needs one "
             "fixed number",
             name, s);
    return DC_ERR_CONFIG;
  }
  return dc_env_parse_int(name, s, v, err, errlen);
}

#define PET_RANK "PET_NODE_RANK x PET_NPROC_PER_NODE + LOCAL_RANK"
#define PET_SIZE "PET_NNODES x PET_NPROC_PER_NODE"

/* The node's number: PET_NODE_RANK, else an Indexed Job's pod number. */
static dc_status pet_node(long nodes, long *node, char *err, size_t errlen) {
  dc_env_id id = set(DC_ENV_PET_NODE_RANK) ? DC_ENV_PET_NODE_RANK
                                           : DC_ENV_JOB_COMPLETION_INDEX;
  if (!set(id)) {
    snprintf(err, errlen,
             "PET_NNODES=%ld is set but neither PET_NODE_RANK "
             "nor JOB_COMPLETION_INDEX is: set the node's number",
             nodes);
    return DC_ERR_CONFIG;
  }
  const char *name = dc_env_info(id)->name;
  dc_status st = dc_env_parse_int(name, dc_env_str(id), node, err, errlen);
  if (st == DC_OK && *node >= nodes) {
    snprintf(err, errlen, "%s=%ld is out of range: PET_NNODES=%ld", name, *node,
             nodes);
    st = DC_ERR_CONFIG;
  }
  return st;
}

/* Kubernetes operators (Kubeflow Trainer v2 sets only PET_*): world size
 * PET_NNODES x PET_NPROC_PER_NODE, rank PET_NODE_RANK x PET_NPROC_PER_NODE +
 * LOCAL_RANK. */
static dc_status pet(long *rank, long *size, char *err, size_t errlen) {
  long nodes = 0, per = 1, node = 0, local = 0;
  dc_status st = pet_int(DC_ENV_PET_NNODES, &nodes, err, errlen);
  if (st == DC_OK && set(DC_ENV_PET_NPROC_PER_NODE))
    st = pet_int(DC_ENV_PET_NPROC_PER_NODE, &per, err, errlen);
  if (st == DC_OK && (nodes < 1 || per < 1)) {
    snprintf(err, errlen,
             "PET_NNODES=%ld, PET_NPROC_PER_NODE=%ld: both "
             "must be 1 or more",
             nodes, per);
    st = DC_ERR_CONFIG;
  }
  if (st == DC_OK)
    st = pet_node(nodes, &node, err, errlen);
  if (st == DC_OK && set(DC_ENV_LOCAL_RANK))
    st = dc_env_parse_int("LOCAL_RANK", dc_env_str(DC_ENV_LOCAL_RANK), &local,
                          err, errlen);
  else if (st == DC_OK && per > 1) {
    snprintf(err, errlen,
             "PET_NPROC_PER_NODE=%ld but LOCAL_RANK is unset: "
             "each of a node's processes needs its number",
             per);
    st = DC_ERR_CONFIG;
  }
  if (st == DC_OK && local >= per) {
    snprintf(err, errlen,
             "LOCAL_RANK=%ld is out of range: "
             "PET_NPROC_PER_NODE=%ld",
             local, per);
    st = DC_ERR_CONFIG;
  }
  *rank = node * per + local;
  *size = nodes * per;
  return st;
}

static int loopback(const dc_addr *a) {
  const struct sockaddr_in *v4 = (const void *)&a->sa;
  const struct sockaddr_in6 *v6 = (const void *)&a->sa;
  if (a->sa.ss_family == AF_INET)
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  return a->sa.ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
}

/* An operator's job of several nodes is several pods, each with a network
 * of its own: without a token (protected mode) the other pods' processes
 * would be refused, and rank 0 would wait out the timeout; refuse it now on
 * every rank. A loopback coordinator is one machine standing in for them. */
static int pet_nodes_ok(const dc_coord *c, char *err, size_t errlen) {
  long nodes = 0;
  char why[160];
  if (pet_int(DC_ENV_PET_NNODES, &nodes, why, sizeof why) != DC_OK ||
      nodes < 2 || loopback(&c->addr) || set(DC_ENV_JOB_TOKEN) ||
      set(DC_ENV_JOB_TOKEN_FILE) || dc_env_flag(DC_ENV_INSECURE) == 1)
    return 1;
  snprintf(err, errlen,
           "PET_NNODES=%ld: the job spans %ld nodes (pods) but has no "
           "DISTCOMM_JOB_TOKEN: without one the coordinator %s (%s) lets in "
           "only its own host's processes; mount a Secret and set "
           "DISTCOMM_JOB_TOKEN_FILE to it (or DISTCOMM_JOB_TOKEN from it) on "
           "every rank, or DISTCOMM_INSECURE=1 on a trusted network",
           nodes, nodes, c->addr.text, c->from);
  return 0;
}

/* Rank and size, each from the first source set (the order at the top). */
static dc_status rank_size(long *rank, const char **rn, long *size,
                           const char **sn, char *err, size_t errlen) {
  dc_status st = first_int(rank_head, NVARS(rank_head), rank, rn, err, errlen);
  if (st == DC_OK)
    st = first_int(size_head, NVARS(size_head), size, sn, err, errlen);
  if (st == DC_OK && !*rn && !*sn && set(DC_ENV_PET_NNODES)) {
    *rn = PET_RANK, *sn = PET_SIZE;
    return pet(rank, size, err, errlen);
  }
  if (st == DC_OK && !*rn)
    st = first_int(rank_tail, NVARS(rank_tail), rank, rn, err, errlen);
  if (st == DC_OK && !*sn)
    st = first_int(size_tail, NVARS(size_tail), size, sn, err, errlen);
  return st;
}

dc_status dc_coord_from_env_sized(dc_coord *c, int rows, const char *rows_from,
                                  char *err, size_t errlen) {
  char buf[320];
  err[0] = '\0';
  const char *text = address_text(buf, sizeof buf, &c->from, err, errlen);
  if (!text)
    return err[0] ? DC_ERR_CONFIG : DC_ERR_UNAVAILABLE;
  dc_status st = resolve(text, c->from, &c->addr, err, errlen);
  long rank = 0, size = rows;
  const char *rn, *sn;
  if (st == DC_OK)
    st = rank_size(&rank, &rn, &size, &sn, err, errlen);
  if (st != DC_OK)
    return st;
  if (sn && rows > 0 && size != rows) {
    snprintf(err, errlen, "%s=%ld but %s has %d rows", sn, size, rows_from,
             rows);
    return DC_ERR_CONFIG;
  }
  if (!sn && rows > 0)
    sn = rows_from, size = rows;
  if (!rn || !sn || size < 1) {
    snprintf(err, errlen, "%s is set, but %s: set %s", c->from,
             !rn ? "no rank is" : "no world size is",
             !rn ? "MLX_RANK (or RANK, SLURM_PROCID)"
                 : "MLX_WORLD_SIZE (or WORLD_SIZE, SLURM_NTASKS) to 1 or more");
    return DC_ERR_CONFIG;
  }
  if (rank >= size) {
    snprintf(err, errlen, "%s=%ld is out of range: %s=%ld (ranks 0..%ld)", rn,
             rank, sn, size, size - 1);
    return DC_ERR_CONFIG;
  }
  if (strcmp(rn, PET_RANK) == 0 && !pet_nodes_ok(c, err, errlen))
    return DC_ERR_CONFIG;
  c->rank = (int)rank;
  c->size = (int)size;
  return DC_OK;
}

dc_status dc_coord_from_env(dc_coord *c, char *err, size_t errlen) {
  return dc_coord_from_env_sized(c, 0, NULL, err, errlen);
}

/* The local address that routes to the coordinator (a UDP connect sends
 * nothing). */
static dc_status routed(const dc_coord *c, dc_addr *a, char *err,
                        size_t errlen) {
  int fd = socket(c->addr.sa.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  memset(a, 0, sizeof *a);
  a->salen = sizeof a->sa;
  if (fd < 0 ||
      connect(fd, (const struct sockaddr *)&c->addr.sa, c->addr.salen) != 0 ||
      getsockname(fd, (struct sockaddr *)&a->sa, &a->salen) != 0) {
    snprintf(err, errlen,
             "no route to the coordinator %s (%s): set "
             "DISTCOMM_IFNAME to the interface to use",
             c->addr.text, c->from);
    if (fd >= 0)
      close(fd);
    return DC_ERR_CONFIG;
  }
  close(fd);
  return DC_OK;
}

/* The first usable address of interface name: IPv4, else global IPv6. */
static int iface_addr(const struct ifaddrs *all, const char *name, dc_addr *a) {
  const struct ifaddrs *best = NULL;
  for (const struct ifaddrs *i = all; i; i = i->ifa_next) {
    if (!i->ifa_addr || strcmp(i->ifa_name, name) != 0)
      continue;
    int fam = i->ifa_addr->sa_family;
    const struct sockaddr_in6 *s6 = (const void *)i->ifa_addr;
    if (fam == AF_INET && (!best || best->ifa_addr->sa_family != AF_INET))
      best = i;
    else if (fam == AF_INET6 && !best && !IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr))
      best = i;
  }
  if (!best)
    return 0;
  memset(a, 0, sizeof *a);
  a->salen = best->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                                  : sizeof(struct sockaddr_in6);
  memcpy(&a->sa, best->ifa_addr, a->salen);
  return 1;
}

static dc_status named(const char *list, dc_addr *out, int max, int *n,
                       char *err, size_t errlen) {
  struct ifaddrs *all = NULL;
  if (getifaddrs(&all) != 0) {
    snprintf(err, errlen, "DISTCOMM_IFNAME: cannot list interfaces");
    return DC_ERR_SYSTEM;
  }
  char names[512];
  snprintf(names, sizeof names, "%s", list);
  dc_status st = DC_OK;
  *n = 0;
  for (char *save = NULL, *s = strtok_r(names, ",", &save); s && st == DC_OK;
       s = strtok_r(NULL, ",", &save)) {
    if (*n == max) {
      snprintf(err, errlen,
               "DISTCOMM_IFNAME='%s' names more than %d "
               "interfaces",
               list, max);
      st = DC_ERR_CONFIG;
    } else if (!iface_addr(all, s, &out[*n])) {
      snprintf(err, errlen,
               "DISTCOMM_IFNAME='%s': interface %s does not "
               "exist or has no usable address",
               list, s);
      st = DC_ERR_CONFIG;
    } else {
      (*n)++;
    }
  }
  freeifaddrs(all);
  if (st == DC_OK && *n == 0) {
    snprintf(err, errlen, "DISTCOMM_IFNAME='%s' names no interface", list);
    st = DC_ERR_CONFIG;
  }
  return st;
}

/* Listening addresses get the port the kernel picks. */
static void port0(dc_addr *a) {
  if (a->sa.ss_family == AF_INET)
    ((struct sockaddr_in *)&a->sa)->sin_port = 0;
  else
    ((struct sockaddr_in6 *)&a->sa)->sin6_port = 0;
  dc_sock_name(&a->sa, a->text, sizeof a->text);
}

dc_status dc_coord_local_addrs(const dc_coord *c, dc_addr *out, int max, int *n,
                               char *err, size_t errlen) {
  const char *list = dc_env_str(DC_ENV_IFNAME);
  dc_status st = list && *list ? named(list, out, max, n, err, errlen)
                               : routed(c, out, err, errlen);
  if (!(list && *list))
    *n = st == DC_OK;
  for (int i = 0; st == DC_OK && i < *n; i++)
    port0(&out[i]);
  return st;
}

dc_status dc_iface_addr(const char *name, dc_addr *out, char *err,
                        size_t errlen) {
  struct ifaddrs *all = NULL;
  if (getifaddrs(&all) != 0) {
    snprintf(err, errlen, "cannot list the network interfaces");
    return DC_ERR_SYSTEM;
  }
  int found = iface_addr(all, name, out);
  freeifaddrs(all);
  if (!found) {
    snprintf(err, errlen,
             "interface %s does not exist or has no usable "
             "address",
             name);
    return DC_ERR_CONFIG;
  }
  port0(out);
  return DC_OK;
}

void dc_coord_note_no_token(const dc_coord *c) {
  const char *tok = dc_env_str(DC_ENV_JOB_TOKEN);
  const char *file = dc_env_str(DC_ENV_JOB_TOKEN_FILE);
  if (!(tok && *tok) && !(file && *file) && c->size > 1 && dc_env_verbose())
    fprintf(stderr,
            "[distcomm rank %d] the job has no DISTCOMM_JOB_TOKEN: only this "
            "host's processes of this user may join it (or anyone, with "
            "DISTCOMM_INSECURE=1)\n",
            c->rank);
}
