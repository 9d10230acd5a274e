/* The survivors' agreement (agree.h): flooding rounds over suspect sets,
 * and a driver of them over one socket per peer. */
#include "core/agree.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/clock.h"

/* A message: "DCAG", kind, the veto (0 or 1), 2 zero bytes, round, size
 * (little-endian 32-bit), then the suspect set as little-endian 64-bit words.
 */
enum { AGREE_HDR = 16, AGREE_ROUND = 1, AGREE_DECIDED = 2 };
static const unsigned char magic[4] = {'D', 'C', 'A', 'G'};

dc_status dc_agree_init(dc_agree *a, int size, int me) {
  memset(a, 0, sizeof *a);
  if (size < 1 || size > DC_AGREE_MAX_RANKS || me < 0 || me >= size)
    return DC_ERR_INVALID;
  a->size = size;
  a->me = me;
  a->words = (size + 63) / 64;
  a->sus = calloc((size_t)a->words, sizeof *a->sus);
  a->prev = calloc((size_t)a->words, sizeof *a->prev);
  a->told = calloc((size_t)a->words, sizeof *a->told);
  if (!a->sus || !a->prev || !a->told) {
    dc_agree_free(a);
    return DC_ERR_NOMEM;
  }
  return DC_OK;
}

void dc_agree_free(dc_agree *a) {
  free(a->sus);
  free(a->prev);
  free(a->told);
  a->sus = a->prev = a->told = NULL;
}

static int has(const uint64_t *set, int r) {
  return (int)((set[r / 64] >> (r % 64)) & 1u);
}

void dc_agree_suspect(dc_agree *a, int peer) {
  if (peer >= 0 && peer < a->size && peer != a->me && !a->decided)
    a->sus[peer / 64] |= (uint64_t)1 << (peer % 64);
}

int dc_agree_suspects(const dc_agree *a, int peer) {
  return peer >= 0 && peer < a->size && has(a->sus, peer);
}

void dc_agree_veto(dc_agree *a) {
  if (!a->decided)
    a->veto = 1;
}

int dc_agree_talks_to(const dc_agree *a, int peer) {
  return peer >= 0 && peer < a->size && peer != a->me && !has(a->sus, peer);
}

size_t dc_agree_msg_bytes(int size) {
  return AGREE_HDR + 8 * (size_t)((size + 63) / 64);
}

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++)
    v |= (uint32_t)p[i] << (8 * i);
  return v;
}

/* What we send is the round's starting set: a round that ends with the
 * same set lets us decide (end_round), because every peer heard it. */
void dc_agree_encode(dc_agree *a, unsigned char *out) {
  memcpy(a->prev, a->sus, (size_t)a->words * sizeof *a->sus);
  a->prev_veto = a->veto;
  memcpy(out, magic, 4);
  out[4] = a->decided ? AGREE_DECIDED : AGREE_ROUND;
  out[5] = (unsigned char)a->veto;
  out[6] = out[7] = 0;
  put32(out + 8, (uint32_t)a->round);
  put32(out + 12, (uint32_t)a->size);
  for (int w = 0; w < a->words; w++)
    for (int i = 0; i < 8; i++)
      out[AGREE_HDR + 8 * w + i] = (unsigned char)(a->sus[w] >> (8 * i));
}

static dc_status bad(char *why, size_t whylen, int peer, const char *what) {
  snprintf(why, whylen, "rank %d sent a bad agreement message: %s", peer, what);
  return DC_ERR_MISMATCH;
}

/* Header checks: a peer's bytes are not trusted. */
static dc_status check_header(const dc_agree *a, int peer,
                              const unsigned char *m, size_t len, char *why,
                              size_t whylen) {
  if (len != dc_agree_msg_bytes(a->size))
    return bad(why, whylen, peer, "wrong length");
  if (memcmp(m, magic, 4) != 0 || m[5] > 1 || m[6] || m[7])
    return bad(why, whylen, peer, "not an agreement message");
  if (m[4] != AGREE_ROUND && m[4] != AGREE_DECIDED)
    return bad(why, whylen, peer, "unknown kind");
  if (get32(m + 12) != (uint32_t)a->size)
    return bad(why, whylen, peer, "another group size");
  if (m[4] == AGREE_ROUND && get32(m + 8) != (uint32_t)a->round)
    return bad(why, whylen, peer, "another round");
  return DC_OK;
}

static dc_status read_set(const dc_agree *a, int peer, const unsigned char *m,
                          uint64_t *set, char *why, size_t whylen) {
  for (int w = 0; w < a->words; w++) {
    set[w] = 0;
    for (int i = 0; i < 8; i++)
      set[w] |= (uint64_t)m[AGREE_HDR + 8 * w + i] << (8 * i);
  }
  int tail = a->size % 64;
  if (tail && (set[a->words - 1] >> tail))
    return bad(why, whylen, peer, "a rank past the group's size");
  if (has(set, peer))
    return bad(why, whylen, peer, "it suspects itself");
  return DC_OK;
}

dc_status dc_agree_receive(dc_agree *a, int peer, const unsigned char *msg,
                           size_t len, char *why, size_t whylen) {
  dc_status st = check_header(a, peer, msg, len, why, whylen);
  if (st != DC_OK)
    return st;
  uint64_t *set = calloc((size_t)a->words, sizeof *set);
  if (!set)
    return DC_ERR_NOMEM;
  st = read_set(a, peer, msg, set, why, whylen);
  if (st == DC_OK && has(set, a->me)) {
    snprintf(why, whylen, "rank %d and the others left this rank out", peer);
    st = DC_ERR_ABORTED;
  }
  if (st == DC_OK && msg[4] == AGREE_DECIDED)
    a->told[peer / 64] |= (uint64_t)1 << (peer % 64);
  if (st == DC_OK && !a->decided) {
    int decided = msg[4] == AGREE_DECIDED;
    for (int w = 0; w < a->words; w++)
      a->sus[w] = decided ? set[w] : a->sus[w] | set[w];
    a->veto = decided ? msg[5] : a->veto | msg[5];
    a->decided = decided;
  }
  free(set);
  return st;
}

int dc_agree_told(const dc_agree *a, int peer) {
  return peer >= 0 && peer < a->size && has(a->told, peer);
}

dc_status dc_agree_decision(const dc_agree *a, int peer,
                            const unsigned char *msg, size_t len, int *same,
                            char *why, size_t whylen) {
  *same = 0;
  if (len != dc_agree_msg_bytes(a->size) || memcmp(msg, magic, 4) != 0)
    return bad(why, whylen, peer, "not an agreement message");
  if (msg[4] != AGREE_DECIDED)
    return DC_OK;
  uint64_t *set = calloc((size_t)a->words, sizeof *set);
  if (!set)
    return DC_ERR_NOMEM;
  dc_status st = read_set(a, peer, msg, set, why, whylen);
  if (st == DC_OK && (memcmp(set, a->sus, (size_t)a->words * sizeof *set) ||
                      msg[5] != a->veto))
    st = bad(why, whylen, peer, "it decided another outcome");
  free(set);
  *same = st == DC_OK;
  return st;
}

int dc_agree_end_round(dc_agree *a) {
  if (!a->decided && a->veto == a->prev_veto &&
      memcmp(a->sus, a->prev, (size_t)a->words * sizeof *a->sus) == 0)
    a->decided = 1;
  if (a->decided)
    return 1;
  a->round++;
  return 0;
}

int dc_agree_members(const dc_agree *a, int *ranks, int *me_new) {
  int n = 0;
  for (int r = 0; r < a->size; r++) {
    if (has(a->sus, r))
      continue;
    if (r == a->me)
      *me_new = n;
    ranks[n++] = r;
  }
  return n;
}

/* ---- the votes' MAC ------------------------------------------------- */

#define AGREE_LABEL "distcomm agree"
enum { SEAL_HDR = 8 + 4 + 4 + 4 + 2 * DC_AUTH_NONCE_BYTES };

static int sealed(const dc_agree_seal *s) {
  return s && s->auth && s->auth->on;
}

size_t dc_agree_wire_bytes(int size, const dc_agree_seal *s) {
  return dc_agree_msg_bytes(size) + (sealed(s) ? DC_AUTH_PROOF_BYTES : 0);
}

void dc_agree_seal_msg(const dc_agree_seal *s, int from, int to,
                       const unsigned char *msg, size_t len,
                       unsigned char mac[DC_AUTH_PROOF_BYTES]) {
  unsigned char *b = malloc(SEAL_HDR + len);
  memset(mac, 0, DC_AUTH_PROOF_BYTES);
  if (!sealed(s) || !b) { /* no memory: a MAC of zeros, refused there */
    free(b);
    return;
  }
  for (int i = 0; i < 8; i++)
    b[i] = (unsigned char)(s->group >> (8 * i));
  put32(b + 8, s->phase);
  put32(b + 12, (uint32_t)from);
  put32(b + 16, (uint32_t)to);
  memcpy(b + 20, s->nonces + (size_t)from * DC_AUTH_NONCE_BYTES,
         DC_AUTH_NONCE_BYTES);
  memcpy(b + 20 + DC_AUTH_NONCE_BYTES,
         s->nonces + (size_t)to * DC_AUTH_NONCE_BYTES, DC_AUTH_NONCE_BYTES);
  memcpy(b + SEAL_HDR, msg, len);
  dc_auth_mac(s->auth, AGREE_LABEL, b, SEAL_HDR + len, mac);
  free(b);
}

dc_status dc_agree_unseal(const dc_agree_seal *s, int from, int to,
                          const unsigned char *wire, size_t len, char *why,
                          size_t whylen) {
  unsigned char want[DC_AUTH_PROOF_BYTES];
  if (!sealed(s))
    return DC_OK;
  dc_agree_seal_msg(s, from, to, wire, len, want);
  unsigned char diff = 0; /* constant time */
  for (int i = 0; i < DC_AUTH_PROOF_BYTES; i++)
    diff |= (unsigned char)(want[i] ^ wire[len + (size_t)i]);
  if (diff == 0)
    return DC_OK;
  snprintf(why, whylen,
           "rank %d's agreement message fails the job token's MAC (forged "
           "or altered on the way)",
           from);
  return DC_ERR_AUTH;
}

/* ---- the rounds over sockets ---------------------------------------- */

/* Wait for fd to be ready for events until the deadline: 1 ready, 0 not. */
static int wait_fd(int fd, short events, double deadline) {
  for (;;) {
    double left = deadline - dc_now();
    struct pollfd p = {.fd = fd, .events = events};
    int ms = left > 0 ? (int)(left * 1000) + 1 : 0;
    int r = poll(&p, 1, ms);
    if (r > 0)
      return 1;
    if (r == 0 || errno != EINTR)
      return 0;
  }
}

/* All n bytes, by the deadline: 1 sent, 0 closed or failed or late. */
static int put_all(int fd, const unsigned char *b, size_t n, double deadline) {
  while (n > 0) {
    ssize_t w = send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      b += w;
      n -= (size_t)w;
    } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
      return 0;
    } else if (!wait_fd(fd, POLLOUT, deadline)) {
      return 0;
    }
  }
  return 1;
}

/* All n bytes: 1 read, 0 closed or failed, -1 silent past the deadline. */
static int get_all(int fd, unsigned char *b, size_t n, double deadline) {
  while (n > 0) {
    ssize_t r = recv(fd, b, n, MSG_DONTWAIT);
    if (r > 0) {
      b += r;
      n -= (size_t)r;
    } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
      return 0;
    } else if (!wait_fd(fd, POLLIN, deadline)) {
      return -1;
    }
  }
  return 1;
}

/* Send this round's message (or the decision) to every peer we talk to
 * (the decision: to every peer whose socket is open), each with its MAC. */
static void send_round(dc_agree *a, const int *fds, const dc_agree_seal *seal,
                       unsigned char *w, double deadline) {
  size_t len = dc_agree_msg_bytes(a->size);
  size_t wire = dc_agree_wire_bytes(a->size, seal);
  int decided = a->decided;
  dc_agree_encode(a, w);
  for (int p = 0; p < a->size; p++) {
    if (fds[p] < 0 || !(decided || dc_agree_talks_to(a, p)))
      continue;
    if (wire > len)
      dc_agree_seal_msg(seal, a->me, p, w, len, w + len);
    if (!put_all(fds[p], w, wire, deadline))
      dc_agree_suspect(a, p);
  }
}

/* Read one message from every peer we talk to, or suspect it. */
static dc_status read_round(dc_agree *a, const int *fds,
                            const dc_agree_seal *seal, unsigned char *w,
                            double deadline, char *why, size_t whylen) {
  size_t len = dc_agree_msg_bytes(a->size);
  size_t wire = dc_agree_wire_bytes(a->size, seal);
  for (int p = 0; p < a->size && !a->decided; p++) {
    if (!dc_agree_talks_to(a, p))
      continue;
    if (fds[p] < 0 || get_all(fds[p], w, wire, deadline) != 1) {
      dc_agree_suspect(a, p);
      continue;
    }
    dc_status st = dc_agree_unseal(seal, p, a->me, w, len, why, whylen);
    if (st == DC_OK)
      st = dc_agree_receive(a, p, w, len, why, whylen);
    if (st != DC_OK)
      return st;
  }
  return DC_OK;
}

dc_status dc_agree_run(dc_agree *a, const int *fds, const dc_agree_seal *seal,
                       double timeout, int *rounds, char *why, size_t whylen) {
  unsigned char *w = malloc(dc_agree_wire_bytes(a->size, seal));
  if (!w)
    return DC_ERR_NOMEM;
  dc_status st = DC_OK;
  int n = 0;
  while (st == DC_OK && !a->decided) {
    double deadline = dc_now() + timeout;
    send_round(a, fds, seal, w, deadline);
    st = read_round(a, fds, seal, w, deadline, why, whylen);
    if (st == DC_OK)
      dc_agree_end_round(a);
    n++;
  }
  if (st == DC_OK)
    send_round(a, fds, seal, w, dc_now() + timeout);
  free(w);
  if (rounds)
    *rounds = n;
  return st;
}
