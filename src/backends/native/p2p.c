/* Point to point by single copy between processes of one host: the
 * receiver reads the message straight from the sender's buffer
 * (process_vm_readv), one copy where the pipes take two (into the pipe
 * and out of it). Only for messages that cannot sit whole in a pipe: such
 * a send never returned before the receiver took it, so waiting for the
 * receiver to read it changes nothing a program can see.
 *
 * The sender's frame (on lane 0, checked like any frame: a receiver that
 * runs another op or size fails with a mismatch) says where the message
 * is, or that it follows through the pipes (this rank cannot read or be
 * read by every peer). The receiver reads it in pieces and adds each
 * piece's bytes to the pipe's `pulled` word (transport/shm.h); the sender
 * waits for the whole message there, never on the pipe back (that carries
 * the peer's own sends, which may come first). The wait is bounded like
 * the engine's: no progress for the group's timeout fails, the interrupt
 * hook is asked every 50 ms, and a word on the peer's control socket (an
 * abort, or its end) is read through the engine, which reports it. */
#include <poll.h>
#include <stdatomic.h>
#include <time.h>

#include "algo/algo.h"
#include "algo/tune.h"
#include "backends/native/native.h"
#include "transport/frame.h"
#include "transport/shm.h"

#define PIECE (256u << 10) /* read per call: progress the sender sees */
#define SPIN_SECONDS 50e-6
#define BACKOFF_MIN_US 20
#define BACKOFF_MAX_US 1000

typedef struct offer {
  uint64_t pull; /* 0: the message follows through the pipes */
  uint64_t at;   /* where it is in the sender's memory */
} offer;

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

int ring_p2p_single_copy(const dc_comm *c, size_t piece_bytes) {
  return c->pull && piece_bytes + DC_FRAME_BYTES > DC_PIPE_BYTES;
}

/* The peer's control socket spoke while we waited: the engine reads it
 * (an abort frame's text, or its end) and fails with what it says. */
static dc_status control_spoke(dc_engine *t, dc_comm *c, dc_conn *k) {
  static char none;
  dc_xfer x = dc_xrecv(k->peer, 0, &none, 0);
  dc_status st = c->run(c, &x, 1);
  if (st != DC_OK)
    return st;
  return dc_engine_fail(t, DC_ERR_MISMATCH,
                        "rank %d (%s) sent a frame while it should be reading "
                        "our buffer (the ranks are out of step)",
                        k->peer, k->addr);
}

static dc_status wait_pulled(dc_engine *t, dc_comm *c, dc_conn *k,
                             uint64_t target) {
  _Atomic uint64_t *word = &k->tx->pulled;
  uint64_t seen = atomic_load_explicit(word, memory_order_acquire);
  double last = dc_now(), asked = last;
  int backoff = BACKOFF_MIN_US;
  while ((int64_t)(target - seen) > 0) {
    double now = dc_now();
    uint64_t v = atomic_load_explicit(word, memory_order_acquire);
    if (v != seen) {
      seen = v;
      last = now;
      backoff = BACKOFF_MIN_US;
      continue;
    }
    if (now - last > dc_engine_timeout(t))
      return dc_engine_fail(
          t, DC_ERR_TIMEOUT,
          "no progress for %.0f s waiting for rank %d (%s) to take our data "
          "(%.1f MiB of %.1f MiB received from it)",
          dc_engine_timeout(t), k->peer, k->addr, mib(k->op_rx),
          mib(c->total_bytes));
    if (t->spin && now - last < SPIN_SECONDS)
      continue;
    struct pollfd p = {.fd = k->fd, .events = POLLIN | POLLRDHUP};
    struct timespec ts = {0, backoff * 1000L};
    if (ppoll(&p, 1, &ts, NULL) > 0) {
      v = atomic_load_explicit(word, memory_order_acquire);
      if ((int64_t)(target - v) <= 0) /* read all, then left */
        return DC_OK;
      return control_spoke(t, c, k);
    }
    if (backoff < BACKOFF_MAX_US)
      backoff *= 2;
    if (t->hooks.interrupt && now - asked >= 0.05) {
      asked = now;
      if (t->hooks.interrupt(t->hooks.arg))
        return dc_engine_fail(t, DC_ERR_INTERRUPTED,
                              "interrupted while waiting");
    }
  }
  return DC_OK;
}

dc_status ring_p2p_send_pulled(dc_engine *t, dc_comm *c, const void *buf,
                               size_t bytes, int peer, int *pulled) {
  dc_conn *k = &t->conns[peer * t->lanes];
  /* the receiver takes what we offer: our vote alone decides */
  int pull = c->pull_ok && k->tx != NULL &&
             (!c->tune || dc_tune_vote(c->tune, DC_TUNE_P2P, bytes));
  offer o = {(uint64_t)pull, (uint64_t)(uintptr_t)buf};
  /* before the offer: the peer adds to it once it has the offer */
  uint64_t before =
      pull ? atomic_load_explicit(&k->tx->pulled, memory_order_acquire) : 0;
  dc_xfer x = dc_xsend(peer, 0, &o, sizeof o);
  dc_status st = c->run(c, &x, 1);
  *pulled = pull;
  if (st != DC_OK || !pull)
    return st;
  return wait_pulled(t, c, k, before + (uint64_t)bytes);
}

dc_status ring_p2p_recv_pulled(dc_engine *t, dc_comm *c, void *buf,
                               size_t bytes, int peer, int *pulled) {
  dc_conn *k = &t->conns[peer * t->lanes];
  offer o = {0, 0};
  dc_xfer x = dc_xrecv(peer, 0, &o, sizeof o);
  dc_status st = c->run(c, &x, 1);
  *pulled = st == DC_OK && o.pull;
  if (!*pulled)
    return st;
  if (!k->rx) /* it reads us and we read it only where the pipes are */
    return dc_engine_fail(t, DC_ERR_MISMATCH,
                          "rank %d (%s) offered single copy, but we share no "
                          "memory with it",
                          peer, k->addr);
  for (size_t at = 0; at < bytes; at += PIECE) {
    size_t len = bytes - at < PIECE ? bytes - at : PIECE;
    st = c->pull(c, peer, (char *)buf + at, o.at + at, len);
    if (st != DC_OK)
      return st;
    atomic_fetch_add_explicit(&k->rx->pulled, (uint64_t)len,
                              memory_order_release);
  }
  return DC_OK;
}
