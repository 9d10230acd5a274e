/* libFuzzer target: the coordinator's messages (src/bootstrap/coordinator.c)
 * as its two ends read them, from a real socket (a socketpair whose other
 * end holds the input and is then closed):
 *   mode 0  rank 0's side: JOINs, each on a new connection (up to 4, one
 *           after the other in the input), read by feed() and judged by
 *           admit(), as serve_round() does; afterwards every admitted rank
 *           must be in range, claimed once, and its addresses parsed.
 *   mode 1  a joiner's side: rank 0's verdict (TABLE or ERROR) read by
 *           verdict(), its header read already or not; a TABLE taken must
 *           have the joiner's size and address count, every address ending
 *           in a NUL.
 *   mode 2  the header decoder and the address-list parser alone.
 * The first input byte picks the mode, the second the world size (2..9)
 * and addresses per rank (1..3), the third: bit 0 (mode 1) whether the
 * header came first, bit 1 a job token (rank 0's and the joiner's nonces
 * are zeros), bit 2 that the harness signs each message: it appends the
 * MAC of the header and the len - 32 payload bytes that follow, so the
 * fuzzer reaches what comes after a good MAC as well as a bad one.
 * The coordinator's functions are static: this file includes
 * coordinator.c, so the library exposes nothing for the fuzzer. */
#include "bootstrap/coordinator.c"

#include <fcntl.h>
#include <time.h>

#define JOINERS 4

/* core/error.c's clock (the rest of that file is not needed here). */
double dc_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A socketpair whose far end got data[0..n) and was closed: reads see the
 * bytes, then EOF. -1 when the pair cannot be made. */
static int stream_of(const uint8_t *data, size_t n) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    return -1;
  int big = 1 << 20;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  fcntl(sv[0], F_SETFL, O_NONBLOCK);
  size_t at = 0;
  while (at < n) {
    ssize_t w = send(sv[0], data + at, n - at, MSG_NOSIGNAL);
    if (w <= 0)
      break; /* the buffer is full: the rest is cut, as a closed peer's */
    at += (size_t)w;
  }
  close(sv[0]);
  return sv[1];
}

/* The token's auth, once (off when libsodium cannot be loaded). */
static const dc_auth *fuzz_auth(int token) {
  static dc_auth on, off;
  static int tried;
  char err[256];
  if (!tried++ && dc_auth_from_token("fuzz-token-0123456789abcdef", &on, err,
                                     sizeof err) != DC_OK)
    on.on = 0;
  return token ? &on : &off;
}

/* A signed copy of the message at data[0..n) (its header, then len - MAC
 * payload bytes) with the MAC under label and a zero nonce appended, into
 * *out (free it) and *outn (0 when it cannot sign); returns the input
 * bytes it took. */
static size_t sign(const dc_auth *a, const char *label,
                   const unsigned char *hdr, const uint8_t *data, size_t n,
                   uint8_t **out, size_t *outn) {
  static const unsigned char zero[NONCE];
  *outn = 0;
  if (!a->on)
    return 0;
  uint32_t len = dc_get32(hdr + 20);
  if (len < MAC || len > PAYLOAD_MAX || n < len - MAC)
    return 0;
  size_t body = len - MAC;
  if (!(*out = malloc(body + MAC)))
    abort();
  memcpy(*out, data, body);
  mac_of(a, label, zero, hdr, data, body, NULL, 0, *out + body);
  *outn = body + MAC;
  return body;
}

static void check_addrs(const dc_addr *a, int n) {
  for (int i = 0; i < n; i++)
    if (!memchr(a[i].text, '\0', sizeof a[i].text) || a[i].text[0] == '\0')
      abort();
}

static void rank0_side(const uint8_t *data, size_t n, int size, int naddrs,
                       const dc_auth *a, int signs) {
  dc_coord c = {.from = "fuzz", .rank = 0, .size = size};
  snprintf(c.addr.text, sizeof c.addr.text, "127.0.0.1:1");
  server s = {.c = &c, .lfd = -1, .naddrs = naddrs, .auth = a};
  s.table = calloc((size_t)size * (size_t)naddrs, sizeof *s.table);
  s.claimed = malloc(sizeof *s.claimed * (size_t)size);
  s.j = calloc(JOINERS, sizeof *s.j);
  if (!s.table || !s.claimed || !s.j)
    abort();
  s.cap = JOINERS;
  for (int r = 0; r < size; r++)
    s.claimed[r] = -1;
  for (int k = 0; k < JOINERS && n > 0 && !s.why[0]; k++) {
    uint8_t *signed_msg = NULL;
    size_t sn = 0, took = signs && n >= HDR
                              ? sign(a, "DCRV join", data, data + HDR, n - HDR,
                                     &signed_msg, &sn)
                              : 0;
    uint8_t *whole = NULL;
    if (sn) { /* the header, the payload, the MAC */
      if (!(whole = malloc(HDR + sn)))
        abort();
      memcpy(whole, data, HDR);
      memcpy(whole + HDR, signed_msg, sn);
      free(signed_msg);
    }
    int fd = sn ? stream_of(whole, HDR + sn) : stream_of(data, n);
    free(whole);
    if (fd < 0)
      break;
    s.j[k] = (joiner){.fd = fd, .rank = -1, .since = dc_now()};
    snprintf(s.j[k].from, sizeof s.j[k].from, "joiner %d", k);
    s.nj = k + 1;
    feed(&s, k); /* reads to the end: the far end is closed */
    joiner *jo = &s.j[k];
    if ((!sn && jo->have > n) || (jo->fd >= 0 && jo->rank == -1))
      abort(); /* read past the input, or neither judged nor dropped */
    size_t used = sn ? HDR + took : jo->have;
    if (used == 0)
      break;
    data += used;
    n -= used;
  }
  int joined = 0;
  for (int r = 0; r < size; r++) {
    int k = s.claimed[r];
    if (k < 0)
      continue;
    if (r == 0 || k >= s.nj || s.j[k].rank != r)
      abort();
    check_addrs(&s.table[r * naddrs], naddrs);
    joined++;
  }
  if (joined != s.joined)
    abort();
  for (int k = 0; k < s.nj; k++)
    drop(&s.j[k]);
  free(s.j);
  free(s.table);
  free(s.claimed);
}

static void joiner_side(const uint8_t *data, size_t n, int size, int naddrs,
                        int header_first, const dc_auth *a, int signs) {
  dc_coord c = {.from = "fuzz", .rank = 1, .size = size};
  snprintf(c.addr.text, sizeof c.addr.text, "127.0.0.1:1");
  unsigned char h[HDR] = {0};
  int have = header_first && n >= HDR;
  if (have) {
    memcpy(h, data, HDR);
    data += HDR;
    n -= HDR;
  }
  /* the header: h, or the stream's first bytes */
  const unsigned char *hp = have ? h : n >= HDR ? data : NULL;
  const uint8_t *rest = have ? data : data + HDR;
  size_t rn = have ? n : n >= HDR ? n - HDR : 0;
  uint8_t *mac_body = NULL, *whole = NULL;
  size_t sn = 0;
  if (signs && hp)
    sign(a, "DCRV verdict", hp, rest, rn, &mac_body, &sn);
  size_t wn = 0;
  if (sn) {
    if (!(whole = malloc(HDR + sn)))
      abort();
    if (!have)
      memcpy(whole, data, HDR);
    memcpy(whole + (have ? 0 : HDR), mac_body, sn);
    wn = (have ? 0 : HDR) + sn;
    free(mac_body);
  }
  int fd = sn ? stream_of(whole, wn) : stream_of(data, n);
  free(whole);
  if (fd < 0)
    return;
  dc_hostfile all = {0};
  uint64_t job = 0;
  char err[512] = "";
  chan L = {.auth = a}; /* our nonce: zeros, as the harness signs with */
  dc_status st = verdict(&c, &L, fd, naddrs, dc_now() + 1.0, h, have, &all,
                         &job, err, sizeof err);
  close(fd);
  if (st == DC_OK) {
    if (all.nranks != size || all.naddrs != naddrs || !all.addrs)
      abort();
    check_addrs(all.addrs, size * naddrs);
    dc_hostfile_free(&all);
  } else if (!err[0] || !memchr(err, '\0', sizeof err) || all.addrs) {
    abort(); /* a failure always says why, and hands back nothing */
  }
}

static void decoders(const uint8_t *data, size_t n, int naddrs) {
  msg m;
  if (n >= HDR) {
    unsigned char *h = malloc(HDR); /* exact size: ASan sees any overread */
    if (!h)
      abort();
    memcpy(h, data, HDR);
    if (decode(h, &m) == 0 && m.len > PAYLOAD_MAX)
      abort();
    free(h);
  }
  char *text = malloc(n ? n : 1);
  dc_addr *out = calloc((size_t)naddrs, sizeof *out);
  char err[200] = "";
  if (!text || !out)
    abort();
  memcpy(text, data, n);
  if (parse_lines(text, n, out, naddrs, err, sizeof err) == DC_OK)
    check_addrs(out, naddrs);
  else if (!err[0])
    abort();
  free(text);
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3)
    return 0;
  int mode = data[0] % 3;
  int world = 2 + data[1] % 8, naddrs = 1 + (data[1] >> 4) % 3;
  int header_first = data[2] & 1, signs = (data[2] >> 2) & 1;
  const dc_auth *a = fuzz_auth((data[2] >> 1) & 1);
  data += 3;
  size -= 3;
  if (mode == 0)
    rank0_side(data, size, world, naddrs, a, signs);
  else if (mode == 1)
    joiner_side(data, size, world, naddrs, header_first, a, signs);
  else
    decoders(data, size, naddrs);
  return 0;
}
