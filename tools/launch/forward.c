#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, mkstemps, strsignal, sigabbrev_np */
#endif
#include "forward.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* Lines of one stream are gathered here and written with few syscalls. The
 * launcher is single-threaded and writes whole lines only, so a line from one
 * rank can never be cut by a line from another. */
static char g_out[2 * DCL_LINE_MAX];
static size_t g_out_len;
static int g_out_fd = 1;
/* Our stdout / stderr reader has gone (e.g. "| head"): indexed by fd 1, 2. */
static bool g_out_broken[3];

static void out_flush(void) {
  if (g_out_len > 0 && dcl_write_all(g_out_fd, g_out, g_out_len) != 0 &&
      errno == EPIPE)
    g_out_broken[g_out_fd] = true;
  g_out_len = 0;
}

static void out_put(const char *p, size_t n) {
  if (g_out_len + n > sizeof g_out)
    out_flush();
  memcpy(g_out + g_out_len, p, n); /* n <= DCL_LINE_MAX < sizeof g_out */
  g_out_len += n;
}

static void put_piece(struct dcl_stream *s, const char *prefix, size_t plen,
                      const char *p, size_t n, bool ends_line) {
  if (plen > 0 && !s->mid_line)
    out_put(prefix, plen);
  out_put(p, n);
  s->mid_line = !ends_line;
}

/* Writes the complete lines in s->buf (and the rest too when force is set,
 * i.e. at EOF or when one line fills the whole buffer). */
static void emit(struct dcl_stream *s, int rank, bool tag, bool force) {
  char prefix[32];
  size_t plen =
      tag ? (size_t)snprintf(prefix, sizeof prefix, "[%d] ", rank) : 0;
  size_t start = 0;
  g_out_fd = s->out_fd;
  for (;;) {
    char *nl = memchr(s->buf + start, '\n', s->len - start);
    if (nl == NULL)
      break;
    size_t end = (size_t)(nl - s->buf) + 1;
    put_piece(s, prefix, plen, s->buf + start, end - start, true);
    start = end;
  }
  /* A full buffer without any newline is one over-long line: write it in
   * pieces rather than wait forever for its end. */
  if (start < s->len && (force || (start == 0 && s->len == DCL_LINE_MAX))) {
    put_piece(s, prefix, plen, s->buf + start, s->len - start, false);
    start = s->len;
  }
  out_flush();
  memmove(s->buf, s->buf + start, s->len - start);
  s->len -= start;
}

int dcl_stream_init(struct dcl_stream *s, int fd, int out_fd) {
  s->fd = fd;
  s->out_fd = out_fd;
  s->len = 0;
  s->mid_line = false;
  s->buf = malloc(DCL_LINE_MAX);
  return s->buf == NULL ? -1 : 0;
}

void dcl_stream_finish(struct dcl_stream *s, int rank, bool tag) {
  if (s->buf != NULL && s->len > 0)
    emit(s, rank, tag, true);
  if (s->fd >= 0)
    close(s->fd);
  s->fd = -1;
  free(s->buf);
  s->buf = NULL;
}

/* Writes the lines that s->len bytes completed; false once our side broke. */
static bool took(struct dcl_stream *s, int rank, bool tag) {
  emit(s, rank, tag, false);
  if (g_out_broken[s->out_fd]) {
    /* Pass the broken pipe on: the rank gets EPIPE/SIGPIPE on its next
     * write, exactly as if it wrote into "| head" itself. */
    s->len = 0;
    dcl_stream_finish(s, rank, tag);
    return false;
  }
  return true;
}

bool dcl_stream_pump(struct dcl_stream *s, int rank, bool tag) {
  if (s->fd < 0)
    return false;
  ssize_t n;
  do {
    n = read(s->fd, s->buf + s->len, DCL_LINE_MAX - s->len);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return true;
  if (n <= 0) { /* EOF, or an error we cannot recover from: same end */
    dcl_stream_finish(s, rank, tag);
    return false;
  }
  s->len += (size_t)n;
  return took(s, rank, tag);
}

bool dcl_stream_put(struct dcl_stream *s, int rank, bool tag, const char *data,
                    size_t len) {
  while (s->buf != NULL && len > 0) {
    size_t n = len < DCL_LINE_MAX - s->len ? len : DCL_LINE_MAX - s->len;
    memcpy(s->buf + s->len, data, n);
    s->len += n;
    data += n;
    len -= n;
    if (!took(s, rank, tag))
      return false;
  }
  return s->buf != NULL;
}

void dcl_input_close(struct dcl_rank *r) {
  if (r->in_fd >= 0)
    close(r->in_fd);
  r->in_fd = -1;
  free(r->inq.buf);
  memset(&r->inq, 0, sizeof r->inq);
}

static int inq_reserve(struct dcl_inq *q, size_t more) {
  if (q->off > 0) { /* slide pending bytes to the front before growing */
    memmove(q->buf, q->buf + q->off, q->len - q->off);
    q->len -= q->off;
    q->off = 0;
  }
  if (q->len + more <= q->cap)
    return 0;
  size_t cap = q->cap ? q->cap : 65536;
  while (cap < q->len + more)
    cap *= 2;
  char *grown = realloc(q->buf, cap);
  if (grown == NULL)
    return -1;
  q->buf = grown;
  q->cap = cap;
  return 0;
}

void dcl_input_push(struct dcl_rank *r, const char *data, size_t len) {
  if (r->in_fd < 0)
    return;
  if (inq_reserve(&r->inq, len) != 0) {
    dcl_error("out of memory queueing stdin for rank %d; closing its stdin",
              r->index);
    dcl_input_close(r);
    return;
  }
  memcpy(r->inq.buf + r->inq.len, data, len);
  r->inq.len += len;
  dcl_input_flush(r, false);
}

void dcl_input_flush(struct dcl_rank *r, bool eof) {
  struct dcl_inq *q = &r->inq;
  while (r->in_fd >= 0 && q->off < q->len) {
    ssize_t w = write(r->in_fd, q->buf + q->off, q->len - q->off);
    if (w > 0) {
      q->off += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return; /* poll tells us when it can take more */
    dcl_info("rank %d no longer reads its stdin (%s)", r->index,
             w < 0 ? strerror(errno) : "short write");
    dcl_input_close(r);
    return;
  }
  q->off = q->len = 0;
  if (eof)
    dcl_input_close(r);
}
