/* stranger: connects to a rank's port as something that is not a member of
 * the job, and says whether the rank refused it.
 *
 *   stranger MODE IP:PORT|@NAME [JOB SIZE]   (@NAME: a rank's Unix twin)
 *     scan         connect and close at once (a port scanner)
 *     garbage      send bytes that are no hello
 *     huge         send a well-formed data frame header announcing 2^62
 *                  bytes, then more bytes (a frame where a hello belongs)
 *     silent       connect and say nothing (held up to 30 s)
 *     wrong-job    a correct hello from another job id (JOB + 1)
 *     no-token     a correct hello for JOB that offers no job token
 *     wrong-token  a correct hello for JOB as rank 1 lane 0 offering a
 *                  token, then a proof made without knowing it
 *     squat        the same hello, then silence instead of a proof (holds
 *                  rank 1's slot, up to 30 s, if the rank let it)
 *     abort-escape a correct hello for JOB as rank 1 lane 0 (a hand-started
 *                  job has no token), then, once let in, an abort frame
 *                  whose text holds terminal escape sequences: the rank
 *                  must report it with the escapes made harmless
 *     impostor     a hello from another job (JOB + 1) to read the refusal,
 *                  which must reveal nothing; then, on a new connection, a
 *                  hello as rank 1 lane 0 with what the refusal revealed
 *                  (or JOB and SIZE: a stranger who knows the job id, e.g.
 *                  from the hostfile's hash); it must be refused too
 *     closed       expect the port closed (connection refused at once)
 *     unanswered   expect a running rank's kept port (for dc_group_shrink)
 *                  to take the connection and a hello-sized garbage but
 *                  answer nothing for 1 s: only a shrink reads it
 *   JOB is DISTCOMM_JOB_ID (hex), SIZE the world size.
 *
 * Prints "stranger MODE from IP:LPORT" once connected (so a script can find
 * the rank's log line about it), then one verdict line. Exit 0 when the rank
 * refused or closed the connection as it should, 1 when it let the stranger
 * in or kept the connection open, 2 on a usage or set-up error. Connecting
 * is retried for 20 s: the rank may not listen yet. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config/env.h"
#include "transport/frame.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct addr {
  struct sockaddr_storage sa;
  socklen_t len;
} addr;

/* "IP:PORT", or "@NAME" for an abstract Unix socket (a rank's twin). */
static int parse_addr(const char *text, addr *a) {
  char ip[64];
  int port;
  memset(a, 0, sizeof *a);
  if (text[0] == '@') {
    struct sockaddr_un *u = (struct sockaddr_un *)&a->sa;
    size_t n = strlen(text + 1);
    if (n + 1 >= sizeof u->sun_path)
      return -1;
    u->sun_family = AF_UNIX;
    memcpy(u->sun_path + 1, text + 1, n);
    a->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
    return 0;
  }
  struct sockaddr_in *in = (struct sockaddr_in *)&a->sa;
  if (sscanf(text, "%63[0-9.]:%d", ip, &port) != 2)
    return -1;
  *in = (struct sockaddr_in){.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port)};
  a->len = sizeof *in;
  return inet_pton(AF_INET, ip, &in->sin_addr) == 1 ? 0 : -1;
}

/* Connected fd, or -1 after retrying for 20 s (-2: refused, with once). */
static int dial(const addr *a, int once) {
  double end = now() + 20;
  do {
    int fd = socket(a->sa.ss_family, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (const struct sockaddr *)&a->sa, a->len) == 0)
      return fd;
    int e = errno;
    close(fd);
    if (once)
      return e == ECONNREFUSED ? -2 : -1;
    usleep(20000);
  } while (now() < end);
  return -1;
}

static void say_from(const char *mode, int fd) {
  struct sockaddr_storage ss;
  struct sockaddr_in *me = (struct sockaddr_in *)&ss;
  socklen_t len = sizeof ss;
  char ip[INET_ADDRSTRLEN] = "?";
  getsockname(fd, (struct sockaddr *)&ss, &len);
  if (ss.ss_family == AF_UNIX) {
    printf("stranger %s from pid %d\n", mode, (int)getpid());
    fflush(stdout);
    return;
  }
  inet_ntop(AF_INET, &me->sin_addr, ip, sizeof ip);
  printf("stranger %s from %s:%u\n", mode, ip, ntohs(me->sin_port));
  fflush(stdout);
}

static int send_all(int fd, const void *b, size_t n) {
  return send(fd, b, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

/* Read until the rank closes (EOF or reset) or secs pass. Keeps what it
 * read first (a reply) in got. 1 when closed. */
static int until_closed(int fd, double secs, unsigned char *got, size_t *n,
                        size_t cap) {
  double end = now() + secs;
  *n = 0;
  while (now() < end) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) <= 0)
      continue;
    unsigned char b[512];
    ssize_t r = recv(fd, b, sizeof b, 0);
    if (r <= 0)
      return 1;
    size_t k = (size_t)r < cap - *n ? (size_t)r : cap - *n;
    memcpy(got + *n, b, k);
    *n += k;
  }
  return 0;
}

/* The ranks' connections per pair: one address each, DISTCOMM_SOCKETS
 * read as the library reads it, as the jobs the tests start. */
static uint32_t lanes(void) { return (uint32_t)dc_env_int(DC_ENV_SOCKETS); }

static dc_hello hello(uint64_t job, uint32_t size, int token) {
  dc_hello h = {.kind = DC_HELLO,
                .version = DC_WIRE_VERSION,
                .job = job,
                .group = 1,
                .rank = 1,
                .size = size,
                .lane = 0,
                .lanes = lanes(),
                .flags = token ? DC_HELLO_TOKEN : 0};
  for (int i = 0; i < DC_NONCE_BYTES; i++)
    h.nonce[i] = (unsigned char)rand();
  return h;
}

/* Send what the mode sends before waiting for the verdict. */
static void speak(const char *mode, int fd, uint64_t job, uint32_t size) {
  unsigned char b[DC_HELLO_BYTES + 64];
  if (strcmp(mode, "garbage") == 0) {
    const char junk[] = "GET / HTTP/1.0\r\n\r\n\x00\xff\xfe garbage";
    send_all(fd, junk, sizeof junk);
  } else if (strcmp(mode, "huge") == 0) {
    dc_frame f = {.kind = DC_FRAME_DATA,
                  .opcode = 1,
                  .count = 1ull << 60,
                  .len = 1ull << 62};
    dc_frame_encode(&f, b);
    memset(b + DC_FRAME_BYTES, 0xab, 64);
    send_all(fd, b, DC_FRAME_BYTES + 64);
  } else if (strcmp(mode, "abort-escape") == 0) {
    dc_hello h = hello(job, size, 0);
    dc_hello_encode(&h, b);
    send_all(fd, b, DC_HELLO_BYTES);
    static const char text[] = "evil\x1b]0;owned\x07\x1b[2J\r\n\x9b"
                               "31m done";
    dc_frame f = {.kind = DC_FRAME_ABORT,
                  .len = sizeof text - 1,
                  .aux = (uint32_t)DC_ERR_PEER_LOST};
    unsigned char hb[DC_FRAME_BYTES];
    dc_frame_encode(&f, hb);
    usleep(300000); /* after the rank's OK */
    send_all(fd, hb, sizeof hb);
    send_all(fd, text, sizeof text - 1);
  } else if (strcmp(mode, "wrong-job") == 0 || strcmp(mode, "no-token") == 0 ||
             strcmp(mode, "wrong-token") == 0 || strcmp(mode, "squat") == 0) {
    int token = strcmp(mode, "wrong-token") == 0 || strcmp(mode, "squat") == 0;
    dc_hello h =
        hello(strcmp(mode, "wrong-job") == 0 ? job + 1 : job, size, token);
    dc_hello_encode(&h, b);
    send_all(fd, b, DC_HELLO_BYTES);
  }
}

/* wrong-token: the rank answers OK and its proof; we answer with a proof
 * made up without the token. */
static void bluff(int fd) {
  unsigned char b[DC_HELLO_BYTES + DC_PROOF_BYTES], mac[32];
  size_t have = 0;
  double end = now() + 10;
  while (have < sizeof b && now() < end) {
    ssize_t r = recv(fd, b + have, sizeof b - have, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN))
      break;
    if (r > 0)
      have += (size_t)r;
    else
      usleep(10000);
  }
  dc_hello h;
  printf("stranger wrong-token: the rank sent %zu bytes (%s)\n", have,
         have >= DC_HELLO_BYTES && dc_hello_decode(b, &h) == DC_OK &&
                 h.kind == DC_HELLO_OK
             ? "OK and its proof"
             : "no OK");
  for (int i = 0; i < 32; i++)
    mac[i] = (unsigned char)rand();
  dc_proof_encode(mac, b);
  send_all(fd, b, DC_PROOF_BYTES);
}

static int verdict(const char *mode, int fd) {
  unsigned char got[512];
  size_t n;
  double t0 = now();
  int hold = strcmp(mode, "silent") == 0 || strcmp(mode, "squat") == 0;
  int closed = until_closed(fd, hold ? 30 : 10, got, &n, sizeof got);
  dc_hello h = {0};
  int reply = n >= DC_HELLO_BYTES && dc_hello_decode(got, &h) == DC_OK;
  if (reply && h.kind == DC_HELLO_REFUSED)
    printf("stranger %s: refused (reason %u: %s)\n", mode, (unsigned)h.reason,
           dc_hello_reason_text(h.reason));
  if (reply && h.kind == DC_HELLO_OK && n == DC_HELLO_BYTES + DC_PROOF_BYTES)
    printf("stranger %s: the rank sent OK and its proof\n", mode);
  printf("stranger %s: %s after %.3f s\n", mode,
         closed ? "closed by the rank" : "STILL OPEN", now() - t0);
  return closed ? 0 : 1;
}

/* impostor: read the first refusal, then claim rank 1 with what it said. */
static int impostor(const addr *a, int fd, uint64_t job, uint32_t size) {
  unsigned char b[DC_HELLO_BYTES], got[512];
  size_t n = 0;
  dc_hello h = hello(job + 1, size, 0), r = {0};
  dc_hello_encode(&h, b);
  send_all(fd, b, sizeof b);
  until_closed(fd, 10, got, &n, sizeof got);
  close(fd);
  if (n < DC_HELLO_BYTES || dc_hello_decode(got, &r) != DC_OK ||
      r.kind != DC_HELLO_REFUSED) {
    printf("stranger impostor: no refusal to read (%zu bytes)\n", n);
    return 1;
  }
  int zero = 1;
  for (int i = 0; i < DC_NONCE_BYTES; i++)
    zero = zero && r.nonce[i] == 0;
  printf("stranger impostor: the refusal reveals job %llx group %llx rank %u "
         "size %u host %llx flags %u nonce %s (reason %u)\n",
         (unsigned long long)r.job, (unsigned long long)r.group,
         (unsigned)r.rank, (unsigned)r.size, (unsigned long long)r.host,
         (unsigned)r.flags, zero ? "zero" : "set", (unsigned)r.reason);
  if ((fd = dial(a, 0)) < 0)
    return 2;
  say_from("impostor", fd);
  h = hello(r.job ? r.job : job, r.size ? r.size : size, 0);
  dc_hello_encode(&h, b);
  send_all(fd, b, sizeof b);
  int rc = verdict("impostor", fd);
  close(fd);
  return rc;
}

/* Nothing comes back for 1 s, neither bytes nor a close. */
static int unanswered(int fd, const char *where) {
  char junk[64];
  memset(junk, 'x', sizeof junk);
  send_all(fd, junk, sizeof junk);
  struct pollfd p = {.fd = fd, .events = POLLIN};
  int r = poll(&p, 1, 1000);
  printf("stranger unanswered %s: %s\n", where,
         r == 0 ? "unanswered for 1 s" : "the rank answered or closed");
  close(fd);
  return r == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  addr a;
  if (argc < 3 || parse_addr(argv[2], &a) != 0) {
    fprintf(stderr, "usage: stranger MODE IP:PORT|@UNIX-NAME [JOB SIZE]\n");
    return 2;
  }
  const char *mode = argv[1];
  uint64_t job = argc > 3 ? strtoull(argv[3], NULL, 16) : 0;
  uint32_t size = argc > 4 ? (uint32_t)atoi(argv[4]) : 2;
  srand((unsigned)(now() * 1e6) ^ (unsigned)getpid());
  int closed_mode = strcmp(mode, "closed") == 0;
  int fd = dial(&a, closed_mode);
  if (closed_mode) {
    printf("stranger closed %s: %s\n", argv[2],
           fd == -2 ? "connection refused (port closed)" : "CONNECTED");
    if (fd >= 0)
      close(fd);
    return fd == -2 ? 0 : 1;
  }
  if (fd >= 0 && strcmp(mode, "unanswered") == 0)
    return unanswered(fd, argv[2]);
  if (fd < 0) {
    printf("stranger %s: could not connect to %s\n", mode, argv[2]);
    return 2;
  }
  say_from(mode, fd);
  if (strcmp(mode, "scan") == 0) {
    close(fd);
    return 0;
  }
  if (strcmp(mode, "impostor") == 0)
    return impostor(&a, fd, job, size);
  speak(mode, fd, job, size);
  if (strcmp(mode, "wrong-token") == 0)
    bluff(fd);
  int rc = verdict(mode, fd);
  close(fd);
  return rc;
}
