/* The world ring group under a PMIx server (Open MPI's mpirun/prterun,
 * srun --mpi=pmix): rank and size from PMIx, each rank's listening
 * addresses and rank 0's job token exchanged with put, commit and a
 * collecting fence, then set-up as from a hostfile (shared memory inside a
 * host, TCP across). libpmix is loaded at run time (dlopen
 * "libpmix.so.2", or DISTCOMM_PMIX_LIBNAME), so nothing links it; it is
 * finalized at exit. */
#include <dlfcn.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "backends/native/native.h"
#include "bootstrap/coordinator.h"
#include "bootstrap/pmix_abi.h"
#include "config/env.h"
#include "transport/auth.h"
#include "transport/sock.h"

#define KEY_ADDRS "distcomm.addrs"
#define KEY_JOB "distcomm.job" /* rank 0's "job-id-hex:token-hex" */
#define TOKEN_BYTES 32

/* The calls used, resolved from libpmix (signatures of the standard). */
static struct {
  dc_pmix_status (*init)(dc_pmix_proc *, dc_pmix_info *, size_t);
  dc_pmix_status (*finalize)(const dc_pmix_info *, size_t);
  dc_pmix_status (*put)(uint8_t, const char *, dc_pmix_value *);
  dc_pmix_status (*commit)(void);
  dc_pmix_status (*fence)(const dc_pmix_proc *, size_t, const dc_pmix_info *,
                          size_t);
  dc_pmix_status (*get)(const dc_pmix_proc *, const char *,
                        const dc_pmix_info *, size_t, dc_pmix_value **);
  const char *(*error_string)(dc_pmix_status);
  void (*value_destruct)(dc_pmix_value *);
} px;

static const char *libname(void) {
  const char *s = dc_env_str(DC_ENV_PMIX_LIBNAME);
  return s && *s ? s : "libpmix.so.2";
}

/* Load libpmix once; never closed (its threads may outlive a failed call). */
static int load(char *err, size_t errlen) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&lock);
  void *lib = px.init ? NULL : dlopen(libname(), RTLD_NOW | RTLD_GLOBAL);
  if (!px.init && lib) {
    static const char *names[] = {"PMIx_Init",         "PMIx_Finalize",
                                  "PMIx_Put",          "PMIx_Commit",
                                  "PMIx_Fence",        "PMIx_Get",
                                  "PMIx_Error_string", "PMIx_Value_destruct"};
    void *slots[] = {&px.init,         &px.finalize,      &px.put,
                     &px.commit,       &px.fence,         &px.get,
                     &px.error_string, &px.value_destruct};
    int i = 0;
    for (void *f; i < 8 && (f = dlsym(lib, names[i])) != NULL; i++)
      memcpy(slots[i], &f, sizeof f); /* object to function pointer */
    if (i < 8) {
      snprintf(err, errlen, "%s has no %s (not libpmix?)", libname(), names[i]);
      memset(&px, 0, sizeof px);
    }
  } else if (!px.init) {
    snprintf(err, errlen,
             "%s cannot be loaded (%s): install Debian's libpmix2, or set "
             "DISTCOMM_BACKEND=mpi to use the MPI library instead",
             libname(), dlerror());
  }
  int ok = px.init != NULL;
  pthread_mutex_unlock(&lock);
  return ok;
}

int dc_pmix_server(void) {
  const char *ns = dc_env_str(DC_ENV_PMIX_NAMESPACE);
  const char *r = dc_env_str(DC_ENV_PMIX_RANK);
  return ns && *ns && r && *r;
}

/* ---- every PMIx call bounded ------------------------------------------
 * A PMIx call that waits (init, fence) runs in a thread of its own; the
 * caller waits for it until the deadline. A call past it is left behind
 * (the process fails its start anyway) with its state on the heap. */
typedef struct bounded {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int done, abandoned;
  dc_pmix_status (*fn)(void *);
  void *arg;
  dc_pmix_status st;
} bounded;

static void *bounded_main(void *p) {
  bounded *b = p;
  dc_pmix_status st = b->fn(b->arg);
  pthread_mutex_lock(&b->lock);
  b->st = st, b->done = 1;
  int gone = b->abandoned;
  pthread_cond_signal(&b->cond);
  pthread_mutex_unlock(&b->lock);
  if (gone)
    free(b); /* its arg went with the caller: fn wrote nothing after */
  return NULL;
}

/* fn(arg)'s status, or 1 (not a PMIx status) when seconds pass first. */
static dc_pmix_status run_bounded(dc_pmix_status (*fn)(void *), void *arg,
                                  double seconds) {
  bounded *b = calloc(1, sizeof *b);
  if (!b)
    return -1;
  pthread_mutex_init(&b->lock, NULL);
  pthread_cond_init(&b->cond, NULL);
  b->fn = fn, b->arg = arg;
  pthread_t t;
  if (pthread_create(&t, NULL, bounded_main, b) != 0) {
    free(b);
    return -1;
  }
  pthread_detach(t);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += (time_t)seconds + 1;
  pthread_mutex_lock(&b->lock);
  while (!b->done && pthread_cond_timedwait(&b->cond, &b->lock, &until) == 0)
    ;
  int done = b->done;
  dc_pmix_status st = done ? b->st : 1;
  b->abandoned = !done;
  pthread_mutex_unlock(&b->lock);
  if (done)
    free(b);
  return st;
}

/* "PMIx_Fence failed: TIMEOUT ..." (or "did not return within 300 s"): st
 * 1 is our own bound passing (run_bounded). */
static dc_status pmix_fail(const char *call, dc_pmix_status st, double secs,
                           char *err, size_t errlen) {
  int late = st == 1 || st == DC_PMIX_ERR_TIMEOUT;
  char what[120];
  if (st == 1)
    snprintf(what, sizeof what, "did not return within %.0f s", secs);
  else
    snprintf(what, sizeof what, "failed: %s",
             px.error_string ? px.error_string(st) : "unknown status");
  snprintf(err, errlen, "%s %s%s", call, what,
           late ? " (DISTCOMM_TIMEOUT): is every rank of the job running?"
                : "");
  return late ? DC_ERR_TIMEOUT : DC_ERR_SYSTEM;
}

/* ---- who we are ---------------------------------------------------------- */
typedef struct job {
  dc_pmix_proc me;
  uint32_t size, local_size;
  uint16_t local_rank;
  double timeout;
  int abandoned; /* a PMIx call past its bound still holds this */
} job;

static void set_info(dc_pmix_info *i, const char *key, uint16_t type) {
  memset(i, 0, sizeof *i);
  snprintf(i->key, sizeof i->key, "%s", key);
  i->value.type = type;
}

/* One value of proc (rank q, or the job's with DC_PMIX_RANK_WILDCARD) by
 * key: local data only (fetched by the collecting fence, or the job's). */
static dc_pmix_status get(const job *j, dc_pmix_rank q, const char *key,
                          dc_pmix_value **v) {
  dc_pmix_proc p = j->me;
  p.rank = q;
  dc_pmix_info info[2];
  set_info(&info[0], DC_PMIX_OPTIONAL, DC_PMIX_BOOL);
  info[0].value.data.flag = true;
  set_info(&info[1], DC_PMIX_TIMEOUT, DC_PMIX_INT);
  info[1].value.data.integer = (int)j->timeout + 1;
  return px.get(&p, key, info, 2, v);
}

static void release(dc_pmix_value *v) {
  if (v) {
    px.value_destruct(v);
    free(v);
  }
}

/* An unsigned value whatever width the server gave it. */
static dc_pmix_status get_uint(const job *j, dc_pmix_rank q, const char *key,
                               uint32_t *out) {
  dc_pmix_value *v = NULL;
  dc_pmix_status st = get(j, q, key, &v);
  if (st == DC_PMIX_SUCCESS)
    *out = v->type == DC_PMIX_UINT16 ? v->data.uint16 : v->data.uint32;
  release(v);
  return st;
}

static dc_pmix_status start_call(void *arg) {
  job *j = arg;
  dc_pmix_status st = px.init(&j->me, NULL, 0);
  uint32_t lr = 0;
  if (st == DC_PMIX_SUCCESS)
    st = get_uint(j, DC_PMIX_RANK_WILDCARD, DC_PMIX_JOB_SIZE, &j->size);
  if (st == DC_PMIX_SUCCESS &&
      get_uint(j, DC_PMIX_RANK_WILDCARD, DC_PMIX_LOCAL_SIZE, &j->local_size))
    j->local_size = 0; /* unknown: not needed, only logged */
  if (st == DC_PMIX_SUCCESS &&
      get_uint(j, j->me.rank, DC_PMIX_LOCAL_RANK, &lr) == DC_PMIX_SUCCESS)
    j->local_rank = (uint16_t)lr;
  return st;
}

/* ---- where we listen ------------------------------------------------------
 */
static void set_addr(dc_addr *a, const void *sa, socklen_t len) {
  memset(a, 0, sizeof *a);
  memcpy(&a->sa, sa, len);
  a->salen = len;
  dc_sock_name(&a->sa, a->text, sizeof a->text); /* port 0: the kernel's */
}

/* Whether sa (IPv4) is the address of an up interface of this host (the
 * name may resolve to another namespace's address). */
static int is_local(const struct ifaddrs *all, const struct sockaddr_in *sa) {
  for (const struct ifaddrs *i = all; i; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
        (i->ifa_flags & IFF_UP) &&
        ((const struct sockaddr_in *)(const void *)i->ifa_addr)
                ->sin_addr.s_addr == sa->sin_addr.s_addr)
      return 1;
  return 0;
}

/* The first non-loopback IPv4 address of this host's name that is one of
 * its interfaces'; else the first up, non-loopback interface's. */
static int host_addr(dc_addr *a) {
  struct ifaddrs *all = NULL;
  if (getifaddrs(&all) != 0)
    return 0;
  char name[256];
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM},
                  *res = NULL;
  int found = 0;
  if (gethostname(name, sizeof name) == 0 &&
      getaddrinfo(name, NULL, &hints, &res) == 0) {
    for (struct addrinfo *r = res; r && !found; r = r->ai_next) {
      const struct sockaddr_in *s = (const void *)r->ai_addr;
      if ((ntohl(s->sin_addr.s_addr) >> 24) != 127 && is_local(all, s))
        set_addr(a, r->ai_addr, sizeof *s), found = 1;
    }
    freeaddrinfo(res);
  }
  for (struct ifaddrs *i = all; i && !found; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
        (i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK))
      set_addr(a, i->ifa_addr, sizeof(struct sockaddr_in)), found = 1;
  freeifaddrs(all);
  return found;
}

/* DISTCOMM_IFNAME's interfaces; else loopback when every rank is on this
 * host; else this host's address. */
static dc_status local_addrs(const job *j, dc_addr *out, int *n, char *err,
                             size_t errlen) {
  const char *names = dc_env_str(DC_ENV_IFNAME);
  if (names && *names) {
    dc_coord c = {.from = "PMIx"};
    return dc_coord_local_addrs(&c, out, DC_HOSTFILE_MAX_ADDRS, n, err, errlen);
  }
  *n = 1;
  if (j->local_size == j->size)
    return dc_addr_parse("127.0.0.1:0", 1, out, err, errlen);
  if (host_addr(out))
    return DC_OK;
  snprintf(err, errlen,
           "this host has no IPv4 address besides loopback: set "
           "DISTCOMM_IFNAME to the interface to use");
  return DC_ERR_CONFIG;
}

/* ---- the exchange ----------------------------------------------------------
 */
typedef struct exchange {
  job *j;
  char mine[DC_HOSTFILE_MAX_ADDRS * 70]; /* "a,b" */
  char jobtext[16 + 1 + 2 * TOKEN_BYTES + 1];
  const char *failed; /* the call that failed */
} exchange;

static dc_pmix_status put(const char *key, char *text) {
  dc_pmix_value v = {.type = DC_PMIX_STRING};
  v.data.string = text;
  return px.put(DC_PMIX_GLOBAL, key, &v);
}

static dc_pmix_status exchange_call(void *arg) {
  exchange *x = arg;
  dc_pmix_status st = put(KEY_ADDRS, x->mine);
  x->failed = "PMIx_Put";
  if (st == DC_PMIX_SUCCESS && x->j->me.rank == 0)
    st = put(KEY_JOB, x->jobtext);
  if (st == DC_PMIX_SUCCESS)
    x->failed = "PMIx_Commit", st = px.commit();
  dc_pmix_info info[2];
  set_info(&info[0], DC_PMIX_COLLECT_DATA, DC_PMIX_BOOL);
  info[0].value.data.flag = true;
  set_info(&info[1], DC_PMIX_TIMEOUT, DC_PMIX_INT);
  info[1].value.data.integer = (int)x->j->timeout;
  if (st == DC_PMIX_SUCCESS)
    x->failed = "PMIx_Fence", st = px.fence(NULL, 0, info, 2);
  return st;
}

/* Rank 0's job id and token: random, "hex16:hex64" (no token when the
 * environment names one: every rank then uses its own). */
static void make_job(exchange *x) {
  unsigned char r[8 + TOKEN_BYTES];
  if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
    uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    for (size_t i = 0; i < sizeof r; i++)
      r[i] = (unsigned char)(t >> (8 * (i % 8))) ^ (unsigned char)i;
  }
  dc_auth a;
  char why[200];
  int own = dc_auth_from_env(&a, why, sizeof why) == DC_OK && a.on;
  dc_auth_clear(&a);
  size_t n = own ? 8 : sizeof r, k = 0;
  for (size_t i = 0; i < n; i++) {
    k += (size_t)snprintf(x->jobtext + k, sizeof x->jobtext - k, "%s%02x",
                          i == 8 ? ":" : "", r[i]);
  }
  if (own)
    snprintf(x->jobtext + k, sizeof x->jobtext - k, ":");
  memset(r, 0, sizeof r);
}

/* Rank 0's job text: the job id, and its token adopted when this rank's
 * environment names none. */
static dc_status take_job(const job *j, uint64_t *id, char *err,
                          size_t errlen) {
  dc_pmix_value *v = NULL;
  dc_pmix_status ps = get(j, 0, KEY_JOB, &v);
  if (ps != DC_PMIX_SUCCESS || v->type != DC_PMIX_STRING ||
      strlen(v->data.string) < 17 || v->data.string[16] != ':') {
    release(v);
    if (ps != DC_PMIX_SUCCESS)
      return pmix_fail("PMIx_Get of rank 0's job token", ps, 0, err, errlen);
    snprintf(err, errlen, "rank 0's job token (PMIx key %s) is malformed",
             KEY_JOB);
    return DC_ERR_SYSTEM;
  }
  *id = strtoull(v->data.string, NULL, 16);
  const char *tok = v->data.string + 17;
  dc_status st = *tok ? dc_auth_adopt_token(tok, err, errlen) : DC_OK;
  release(v);
  return st;
}

/* Every rank's addresses into all (naddrs each, the same on every rank). */
static dc_status take_addrs(const job *j, int naddrs, dc_hostfile *all,
                            char *err, size_t errlen) {
  all->nranks = (int)j->size, all->naddrs = naddrs;
  all->addrs = calloc((size_t)j->size * (size_t)naddrs, sizeof *all->addrs);
  if (!all->addrs)
    return DC_ERR_NOMEM;
  dc_status st = DC_OK;
  for (uint32_t q = 0; st == DC_OK && q < j->size; q++) {
    dc_pmix_value *v = NULL;
    dc_pmix_status ps = get(j, q, KEY_ADDRS, &v);
    if (ps != DC_PMIX_SUCCESS || v->type != DC_PMIX_STRING) {
      char call[60];
      snprintf(call, sizeof call, "PMIx_Get of rank %u's addresses", q);
      st = ps ? pmix_fail(call, ps, 0, err, errlen) : DC_ERR_SYSTEM;
      if (!ps)
        snprintf(err, errlen, "rank %u's addresses are not text", q);
      release(v);
      break;
    }
    char *save = NULL, *s = strtok_r(v->data.string, ",", &save);
    for (int k = 0; st == DC_OK && k < naddrs; k++) {
      char why[160];
      st = s ? dc_addr_parse(s, 0, &all->addrs[q * (uint32_t)naddrs + k], why,
                             sizeof why)
             : DC_ERR_SYSTEM;
      if (st != DC_OK)
        snprintf(err, errlen, "rank %u's addresses '%s': %s", q, v->data.string,
                 s ? why : "fewer than this rank's");
      s = strtok_r(NULL, ",", &save);
    }
    release(v);
  }
  if (st != DC_OK)
    dc_hostfile_free(all);
  return st;
}

static dc_status exchange_all(job *j, const dc_addr *mine, int n,
                              dc_hostfile *all, uint64_t *id, char *err,
                              size_t errlen) {
  exchange *x = calloc(1, sizeof *x);
  if (!x)
    return DC_ERR_NOMEM;
  x->j = j;
  for (int i = 0, k = 0; i < n; i++)
    k += snprintf(x->mine + k, sizeof x->mine - (size_t)k, "%s%s", i ? "," : "",
                  mine[i].text);
  if (j->me.rank == 0)
    make_job(x);
  dc_pmix_status ps = run_bounded(exchange_call, x, j->timeout);
  dc_status st = DC_OK;
  if (ps != DC_PMIX_SUCCESS) {
    st = pmix_fail(ps == 1 ? "PMIx_Fence" : x->failed, ps, j->timeout, err,
                   errlen);
    if ((j->abandoned = ps == 1)) /* the call still runs: it keeps x, j */
      return st;
  }
  memset(x->jobtext, 0, sizeof x->jobtext);
  free(x);
  if (st == DC_OK)
    st = take_job(j, id, err, errlen);
  if (st == DC_OK)
    st = take_addrs(j, n, all, err, errlen);
  return st;
}

/* ---- the group -------------------------------------------------------------
 * PMIx stays initialized until exit once it was: libpmix cannot start again
 * after its last PMIx_Finalize, and a process may make its world twice.
 * Each later init is released at once (PMIx counts them). */
static int held, stuck; /* under dc_init's lock */

static void finalize_at_exit(void) {
  if (!stuck) /* never beside a call left running */
    px.finalize(NULL, 0);
}

static void release_pmix(const job *j) {
  stuck |= j->abandoned;
  if (j->abandoned)
    return;
  if (!held) {
    held = 1;
    atexit(finalize_at_exit);
  } else {
    px.finalize(NULL, 0);
  }
}

static dc_status build(job *j, dc_group **out, char *err, size_t errlen) {
  dc_addr mine[DC_HOSTFILE_MAX_ADDRS];
  int fds[DC_HOSTFILE_MAX_ADDRS], twins[DC_HOSTFILE_MAX_ADDRS], n = 0;
  dc_status st = local_addrs(j, mine, &n, err, errlen);
  if (st == DC_OK)
    st = dc_world_listen((int)j->me.rank, mine, n, fds, twins, err, errlen);
  if (st != DC_OK)
    return st;
  dc_hostfile all = {0};
  uint64_t id = 0;
  st = exchange_all(j, mine, n, &all, &id, err, errlen);
  if (st != DC_OK) {
    dc_world_unlisten(fds, twins, n);
    return st;
  }
  return dc_world_build((int)j->me.rank, (int)j->size, mine, n, fds, twins,
                        &all, id, j->timeout, out, err, errlen);
}

static dc_status start(job *j, char *err, size_t errlen) {
  dc_pmix_status ps = run_bounded(start_call, j, j->timeout);
  j->abandoned = ps == 1; /* the call left behind keeps j */
  if (ps != DC_PMIX_SUCCESS)
    return pmix_fail("PMIx_Init", ps, j->timeout, err, errlen);
  if (j->size < 1 || j->me.rank >= j->size) {
    snprintf(err, errlen, "PMIx gave rank %u of a job of %u", j->me.rank,
             j->size);
    return DC_ERR_SYSTEM;
  }
  return DC_OK;
}

dc_status dc_ring_pmix_init(dc_group **out) {
  *out = NULL;
  if (!dc_pmix_server())
    return dc_init_fail(DC_ERR_UNAVAILABLE,
                        "init: no PMIx server (PMIX_NAMESPACE and PMIX_RANK "
                        "are unset)");
  char err[700];
  if (!load(err, sizeof err))
    return dc_init_fail(DC_ERR_UNAVAILABLE,
                        "init: a PMIx server started "
                        "this process, but %s",
                        err);
  job *j = calloc(1, sizeof *j);
  if (!j)
    return dc_init_fail(DC_ERR_NOMEM, "init: out of memory");
  j->timeout = dc_default_timeout();
  dc_status st = start(j, err, sizeof err);
  if (j->abandoned) /* PMIx_Init still runs: j is its */
    return dc_init_fail(st, "init: %s", err);
  if (st == DC_OK) {
    st = build(j, out, err, sizeof err);
    release_pmix(j);
  }
  job mine = *j;
  if (!j->abandoned)
    free(j);
  if (st != DC_OK)
    return dc_init_fail(st, "init: PMIx (namespace %s, rank %u): %s",
                        mine.me.nspace, mine.me.rank, err);
  ring_impl *R = (*out)->impl;
  dc_log(*out,
         "ring ready by PMIx (namespace %s): rank %u of %u, local rank %u "
         "of %u, %d connection(s) per peer",
         mine.me.nspace, mine.me.rank, mine.size, mine.local_rank,
         mine.local_size, R->naddrs * R->sockets);
  return DC_OK;
}
