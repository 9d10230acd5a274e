/* Job-token challenge-response with libsodium loaded at run time; see
 * auth.h. */
#include "transport/auth.h"

#include "config/env.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The few libsodium calls used, with their documented signatures (no
 * <sodium.h>: the library builds without it). */
typedef int (*init_fn)(void);
typedef void (*random_fn)(void *buf, size_t size);
typedef int (*hash_fn)(unsigned char *out, size_t outlen,
                       const unsigned char *in, unsigned long long inlen,
                       const unsigned char *key, size_t keylen);
typedef int (*memcmp_fn)(const void *a, const void *b, size_t len);
typedef void (*memzero_fn)(void *p, size_t len);
typedef int (*poly_init_fn)(void *state, const unsigned char *key);
typedef int (*poly_update_fn)(void *state, const unsigned char *in,
                              unsigned long long inlen);
typedef int (*poly_final_fn)(void *state, unsigned char *out);
typedef size_t (*size_fn)(void);

/* Room for libsodium's crypto_onetimeauth_poly1305_state (256 bytes,
 * 16-aligned, in every release); checked when it is loaded. */
#define POLY_STATE_MAX 512

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *soname = "libsodium.so.23";
static struct {
  random_fn random;
  hash_fn hash;
  memcmp_fn cmp;
  memzero_fn zero;
  poly_init_fn poly_init;
  poly_update_fn poly_update;
  poly_final_fn poly_final;
} na;                        /* all set, or all NULL */
static char load_error[256]; /* written once inside pthread_once */

/* Through a union: ISO C has no conversion from void * to a function
 * pointer, and POSIX guarantees dlsym's result is usable this way. */
typedef union sym {
  void *p;
  init_fn init;
  random_fn random;
  hash_fn hash;
  memcmp_fn cmp;
  memzero_fn zero;
  poly_init_fn poly_init;
  poly_update_fn poly_update;
  poly_final_fn poly_final;
  size_fn size;
} sym;

static sym lookup(void *lib, const char *name) {
  sym s = {dlsym(lib, name)};
  if (!s.p && !load_error[0]) {
    const char *why = dlerror();
    snprintf(load_error, sizeof load_error, "%s", why ? why : name);
  }
  return s;
}

static void load_sodium(void) {
  void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    snprintf(load_error, sizeof load_error, "%s", why ? why : soname);
    return;
  }
  sym init = lookup(lib, "sodium_init"), rnd = lookup(lib, "randombytes_buf");
  sym hash = lookup(lib, "crypto_generichash");
  sym cmp = lookup(lib, "sodium_memcmp"), zero = lookup(lib, "sodium_memzero");
  sym pi = lookup(lib, "crypto_onetimeauth_poly1305_init");
  sym pu = lookup(lib, "crypto_onetimeauth_poly1305_update");
  sym pf = lookup(lib, "crypto_onetimeauth_poly1305_final");
  sym ps = lookup(lib, "crypto_onetimeauth_poly1305_statebytes");
  if (!init.p || !rnd.p || !hash.p || !cmp.p || !zero.p || !pi.p || !pu.p ||
      !pf.p || !ps.p) {
    dlclose(lib); /* nothing from it is in use yet */
    return;
  }
  if (ps.size() > POLY_STATE_MAX) {
    snprintf(load_error, sizeof load_error,
             "its Poly1305 state is %zu "
             "bytes, more than the %d this library has room for",
             ps.size(), POLY_STATE_MAX);
    dlclose(lib);
    return;
  }
  if (init.init() < 0) { /* 0 ready, 1 already was; < 0 no randomness */
    snprintf(load_error, sizeof load_error, "sodium_init failed");
    dlclose(lib);
    return;
  }
  /* Never closed: later groups of the process use it again. */
  na.random = rnd.random;
  na.hash = hash.hash;
  na.cmp = cmp.cmp;
  na.zero = zero.zero;
  na.poly_init = pi.poly_init;
  na.poly_update = pu.poly_update;
  na.poly_final = pf.poly_final;
}

void dc_auth_set_soname_for_tests(const char *name) { soname = name; }

dc_status dc_auth_from_token(const char *token, dc_auth *a, char *err,
                             size_t errlen) {
  memset(a, 0, sizeof *a);
  if (!token || !*token)
    return DC_OK;
  size_t len = strlen(token);
  if (len < DC_AUTH_TOKEN_MIN) {
    snprintf(err, errlen,
             "DISTCOMM_JOB_TOKEN is too short (%zu characters; "
             "use at least %d random ones, or unset it)",
             len, DC_AUTH_TOKEN_MIN);
    return DC_ERR_CONFIG;
  }
  pthread_once(&load_once, load_sodium);
  if (!na.hash) {
    snprintf(err, errlen,
             "DISTCOMM_JOB_TOKEN is set, and checking it needs "
             "libsodium (apt-get install libsodium23): %s",
             load_error);
    return DC_ERR_UNAVAILABLE;
  }
  /* The key is the token hashed under a label of ours, so the MAC key is
   * fixed-size and differs from any other use of the same token. */
  static const unsigned char label[] = "distcomm job token v1";
  size_t n = sizeof label + len;
  unsigned char *in = malloc(n);
  if (!in) {
    snprintf(err, errlen, "out of memory");
    return DC_ERR_NOMEM;
  }
  memcpy(in, label, sizeof label);
  memcpy(in + sizeof label, token, len);
  na.hash(a->key, sizeof a->key, in, n, NULL, 0);
  na.zero(in, n);
  free(in);
  a->on = 1;
  return DC_OK;
}

/* The token is read once, kept as its key, and taken out of the
 * environment, so the processes a rank starts do not inherit it; later
 * groups (split, a retried init) use the key kept here. */
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int read;
  dc_status st;
  dc_auth auth;
  char err[256];
} env_token;

/* DISTCOMM_JOB_TOKEN_FILE's first line into tok: the file must be ours
 * and unreadable by others, as an ssh key must. */
static dc_status token_file(const char *path, char *tok, size_t cap, char *err,
                            size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  ssize_t n = -1;
  const char *why = NULL;
  if (fd < 0 || fstat(fd, &st) != 0)
    why = strerror(errno);
  else if (st.st_uid != geteuid())
    why = "it is not owned by this user";
  else if (st.st_mode & 077)
    why = "group or others may read or write it (chmod 600 it)";
  else if ((n = read(fd, tok, cap - 1)) < 0)
    why = strerror(errno);
  if (fd >= 0)
    close(fd);
  if (why) {
    snprintf(err, errlen, "DISTCOMM_JOB_TOKEN_FILE=%s: %s", path, why);
    return DC_ERR_CONFIG;
  }
  tok[n] = '\0';
  tok[strcspn(tok, "\r\n")] = '\0';
  return DC_OK;
}

/* DISTCOMM_JOB_TOKEN, else DISTCOMM_JOB_TOKEN_FILE's token. */
static dc_status read_env_token(dc_auth *a, char *err, size_t errlen) {
  const char *tok = dc_env_str(DC_ENV_JOB_TOKEN);
  const char *path = dc_env_str(DC_ENV_JOB_TOKEN_FILE);
  if ((tok && *tok) || !path || !*path)
    return dc_auth_from_token(tok, a, err, errlen);
  char buf[4096];
  dc_status st = token_file(path, buf, sizeof buf, err, errlen);
  if (st == DC_OK && !buf[0]) {
    snprintf(err, errlen, "DISTCOMM_JOB_TOKEN_FILE=%s is empty", path);
    st = DC_ERR_CONFIG;
  }
  if (st == DC_OK)
    st = dc_auth_from_token(buf, a, err, errlen);
  memset(buf, 0, sizeof buf);
  return st;
}

/* DISTCOMM_SECURE: 0 (unset), or 1 = auth; a->on must be known. */
static dc_status read_secure(dc_auth *a, char *err, size_t errlen) {
  const char *v = dc_env_str(DC_ENV_SECURE);
  a->secure = 0;
  if (!v || !*v || !strcmp(v, "0") || !strcmp(v, "off"))
    return DC_OK;
  if (strcmp(v, "1") != 0 && strcmp(v, "auth") != 0) {
    snprintf(err, errlen,
             "DISTCOMM_SECURE=%.40s: use 0 (frames not "
             "authenticated) or 1 / auth (every frame on TCP carries a "
             "MAC; nothing is encrypted)",
             v);
    return DC_ERR_CONFIG;
  }
  if (!a->on) {
    snprintf(err, errlen,
             "DISTCOMM_SECURE=%s needs a job token (the MAC "
             "keys come from it): start the ranks through distcomm-launch, "
             "or set DISTCOMM_JOB_TOKEN (or DISTCOMM_JOB_TOKEN_FILE) on "
             "every rank",
             v);
    return DC_ERR_CONFIG;
  }
  a->secure = 1;
  return DC_OK;
}

dc_status dc_auth_from_env(dc_auth *a, char *err, size_t errlen) {
  pthread_mutex_lock(&env_lock);
  if (!env_token.read) {
    env_token.st =
        read_env_token(&env_token.auth, env_token.err, sizeof env_token.err);
    env_token.read = 1;
    unsetenv(dc_env_info(DC_ENV_JOB_TOKEN)->name);
  }
  dc_status st = env_token.st;
  *a = env_token.auth;
  if (st != DC_OK)
    snprintf(err, errlen, "%s", env_token.err);
  pthread_mutex_unlock(&env_lock);
  if (st == DC_OK && (st = read_secure(a, err, errlen)) != DC_OK)
    dc_auth_clear(a);
  return st;
}

void dc_auth_nonce(const dc_auth *a, unsigned char out[DC_AUTH_NONCE_BYTES]) {
  memset(out, 0, DC_AUTH_NONCE_BYTES);
  if (a->on)
    na.random(out, DC_AUTH_NONCE_BYTES);
}

static unsigned char *put_le(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++)
    *p++ = (unsigned char)(v >> (8 * i));
  return p;
}

/* label | nonce_c | nonce_a | job | group | connector | acceptor | size |
 * lane | host_c | host_a | flags_c | flags_a, all fixed-size: no two
 * handshakes give the same bytes. */
#define TRANSCRIPT_BYTES (16 + 2 * DC_AUTH_NONCE_BYTES + 4 * 8 + 6 * 4)

static void transcript(const dc_auth_bind *b, int dir,
                       unsigned char out[TRANSCRIPT_BYTES]) {
  static const char *const labels[] = {"", "dc acceptor", "dc connector",
                                       "dc session v1"};
  memset(out, 0, 16);
  memcpy(out, labels[dir], strlen(labels[dir]));
  unsigned char *p = out + 16;
  memcpy(p, b->nonce_c, DC_AUTH_NONCE_BYTES);
  memcpy(p + DC_AUTH_NONCE_BYTES, b->nonce_a, DC_AUTH_NONCE_BYTES);
  p += 2 * DC_AUTH_NONCE_BYTES;
  p = put_le(p, b->job, 8);
  p = put_le(p, b->group, 8);
  p = put_le(p, b->connector, 4);
  p = put_le(p, b->acceptor, 4);
  p = put_le(p, b->size, 4);
  p = put_le(p, b->lane, 4);
  p = put_le(p, b->host_c, 8);
  p = put_le(p, b->host_a, 8);
  p = put_le(p, b->flags_c, 4);
  put_le(p, b->flags_a, 4);
}

void dc_auth_prove(const dc_auth *a, const dc_auth_bind *b, int dir,
                   unsigned char out[DC_AUTH_PROOF_BYTES]) {
  memset(out, 0, DC_AUTH_PROOF_BYTES);
  if (!a->on)
    return;
  unsigned char t[TRANSCRIPT_BYTES];
  transcript(b, dir, t);
  na.hash(out, DC_AUTH_PROOF_BYTES, t, sizeof t, a->key, sizeof a->key);
}

int dc_auth_verify(const dc_auth *a, const dc_auth_bind *b, int dir,
                   const unsigned char proof[DC_AUTH_PROOF_BYTES]) {
  if (!a->on)
    return 0;
  unsigned char want[DC_AUTH_PROOF_BYTES];
  dc_auth_prove(a, b, dir, want);
  int ok = na.cmp(want, proof, sizeof want) == 0;
  na.zero(want, sizeof want);
  return ok;
}

void dc_auth_mac(const dc_auth *a, const char *label, const void *msg, size_t n,
                 unsigned char out[DC_AUTH_PROOF_BYTES]) {
  memset(out, 0, DC_AUTH_PROOF_BYTES);
  if (!a->on)
    return;
  unsigned char sub[DC_AUTH_KEY_BYTES]; /* a key of its own per label */
  na.hash(sub, sizeof sub, (const unsigned char *)label, strlen(label), a->key,
          sizeof a->key);
  na.hash(out, DC_AUTH_PROOF_BYTES, msg, n, sub, sizeof sub);
  na.zero(sub, sizeof sub);
}

int dc_auth_mac_ok(const dc_auth *a, const char *label, const void *msg,
                   size_t n, const unsigned char mac[DC_AUTH_PROOF_BYTES]) {
  if (!a->on)
    return 0;
  unsigned char want[DC_AUTH_PROOF_BYTES];
  dc_auth_mac(a, label, msg, n, want);
  int ok = na.cmp(want, mac, sizeof want) == 0;
  na.zero(want, sizeof want);
  return ok;
}

/* A token a bootstrap shared (PMIx: rank 0's), for a job whose
 * environment names none: DISTCOMM_JOB_TOKEN(_FILE) win. Later calls of
 * dc_auth_from_env give its key. */
dc_status dc_auth_adopt_token(const char *token, char *err, size_t errlen) {
  dc_auth a;
  dc_status st = dc_auth_from_env(&a, err, errlen);
  if (st != DC_OK || a.on) {
    dc_auth_clear(&a);
    return st;
  }
  pthread_mutex_lock(&env_lock);
  if (!env_token.auth.on) {
    st = dc_auth_from_token(token, &env_token.auth, err, errlen);
    if (st != DC_OK)
      memset(&env_token.auth, 0, sizeof env_token.auth);
  }
  pthread_mutex_unlock(&env_lock);
  return st;
}

void dc_auth_clear(dc_auth *a) {
  if (a->on)
    na.zero(a->key, sizeof a->key);
  a->on = 0;
}

/* ---- authenticated frames ----------------------------------------------- */

#define SESSION 3 /* the transcript's label for the session key */

struct dc_seal {
  _Alignas(64) unsigned char state[POLY_STATE_MAX]; /* the frame coming in */
  unsigned char tx_key[DC_AUTH_KEY_BYTES], rx_key[DC_AUTH_KEY_BYTES];
  uint64_t tx_n, rx_n; /* frames sent, frames begun coming in */
};

dc_seal *dc_seal_new(const dc_auth *a, const dc_auth_bind *b,
                     int is_connector) {
  if (!a->on)
    return NULL;
  dc_seal *s = aligned_alloc(64, (sizeof(dc_seal) + 63) / 64 * 64);
  if (!s)
    return NULL;
  memset(s, 0, sizeof *s);
  unsigned char t[TRANSCRIPT_BYTES], session[DC_AUTH_KEY_BYTES];
  transcript(b, SESSION, t);
  na.hash(session, sizeof session, t, sizeof t, a->key, sizeof a->key);
  unsigned char *c2a = is_connector ? s->tx_key : s->rx_key;
  unsigned char *a2c = is_connector ? s->rx_key : s->tx_key;
  na.hash(c2a, DC_AUTH_KEY_BYTES, (const unsigned char *)"c->a", 4, session,
          sizeof session);
  na.hash(a2c, DC_AUTH_KEY_BYTES, (const unsigned char *)"a->c", 4, session,
          sizeof session);
  na.zero(session, sizeof session);
  return s;
}

void dc_seal_free(dc_seal *s) {
  if (!s)
    return;
  na.zero(s, sizeof *s);
  free(s);
}

/* Start state for frame n under a direction's key: Poly1305 with the
 * one-time key BLAKE2b(key, n). */
static void frame_start(void *state, const unsigned char *key, uint64_t n) {
  unsigned char num[8], once[32];
  put_le(num, n, 8);
  na.hash(once, sizeof once, num, sizeof num, key, DC_AUTH_KEY_BYTES);
  na.poly_init(state, once);
  na.zero(once, sizeof once);
}

void dc_seal_tag(dc_seal *s, const unsigned char *hdr, size_t hn,
                 const void *payload, size_t n,
                 unsigned char tag[DC_SEAL_TAG_BYTES]) {
  _Alignas(64) unsigned char state[POLY_STATE_MAX];
  frame_start(state, s->tx_key, s->tx_n);
  if (hn) /* a record after a frame's first has no header */
    na.poly_update(state, hdr, hn);
  if (n)
    na.poly_update(state, payload, n);
  na.poly_final(state, tag);
}

void dc_seal_sent(dc_seal *s) { s->tx_n++; }

void dc_seal_begin(dc_seal *s, const unsigned char *hdr, size_t hn) {
  frame_start(s->state, s->rx_key, s->rx_n++);
  if (hn)
    na.poly_update(s->state, hdr, hn);
}

void dc_seal_update(dc_seal *s, const void *p, size_t n) {
  na.poly_update(s->state, p, n);
}

int dc_seal_check(dc_seal *s, const unsigned char tag[DC_SEAL_TAG_BYTES]) {
  unsigned char want[DC_SEAL_TAG_BYTES];
  na.poly_final(s->state, want);
  int ok = na.cmp(want, tag, sizeof want) == 0;
  na.zero(want, sizeof want);
  return ok;
}
