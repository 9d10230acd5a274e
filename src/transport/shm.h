/* Shared memory between ranks on one host: byte pipes with the same frames
 * as TCP, so the engine, the algorithms and the mismatch checks are the same
 * whichever way the bytes go.
 *
 * Each rank creates one segment holding its incoming pipes (one per
 * same-host peer and lane), created O_EXCL with mode 0600 (another user
 * cannot attach) under a random name (nobody can guess or squat it). Peers map
 * it, and it is unlinked as soon as all have: a crash after set-up leaves
 * nothing in /dev/shm. A pipe has one producer and one consumer; head and tail
 * live on their own cache lines.
 *
 * A segment holds one pipe per same-host peer and lane, so a host's pipes
 * would grow as the square of its ranks: with many peers each pipe is
 * smaller (dc_pipe_cap): 256 ranks on one host take about 540 MB of
 * /dev/shm, not 34 GB (one lane) or 67 GB (two, the default;
 * bench/scale/many-ranks.md). */
#ifndef DC_TRANSPORT_SHM_H
#define DC_TRANSPORT_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "distcomm.h"

/* A pipe holds DC_PIPE_BYTES (a power of two) while the segment's pipes
 * fit its budget; more pipes hold less, DC_PIPE_MIN_BYTES at least. The
 * budget is DC_SHM_PIPES_BUDGET up to DC_SHM_PIPES_FULL pipes, and shrinks
 * as 1/npipes past that, so a host's pipes grow as its ranks, not as their
 * pairs: a segment's pages are reserved (fallocate) and freed by every rank
 * at set-up, the largest share of a 256-rank job's CPU after its
 * connections (bench/scale/many-ranks.md). */
#define DC_PIPE_BYTES (512u * 1024u)
#define DC_PIPE_MIN_BYTES (4u * 1024u)
#define DC_SHM_PIPES_BUDGET (8u << 20)
#define DC_SHM_PIPES_FULL 64u
#define DC_SHM_PREFIX "/distcomm-"
#define DC_SHM_NAME_BYTES 96
#define DC_MBOX_SLOTS 64u  /* a power of two */
#define DC_MBOX_HDR 32     /* a frame header (DC_FRAME_BYTES) */
#define DC_MBOX_PAYLOAD 28 /* what fits beside it in one cache line */

/* A tiny message in one cache line: flag (message number + 1) written
 * last, so a reader that sees the flag sees the rest, and the message
 * crosses between cores as one line instead of head, header and data. */
typedef struct dc_mbox_slot {
  _Alignas(64) _Atomic uint32_t flag;
  unsigned char hdr[DC_MBOX_HDR];
  unsigned char data[DC_MBOX_PAYLOAD];
} dc_mbox_slot;

typedef struct dc_pipe {
  _Alignas(64) _Atomic uint64_t head;  /* bytes written, by the producer */
  _Alignas(64) _Atomic uint64_t tail;  /* bytes read, by the consumer */
  _Alignas(64) _Atomic uint64_t taken; /* mailbox messages read */
  /* Bytes of point-to-point messages the consumer has read straight from
   * the producer's memory (single copy, backends/native/p2p.c), by the
   * consumer: the producer keeps its buffer until they are all read. */
  _Alignas(64) _Atomic uint64_t pulled;
  dc_mbox_slot mbox[DC_MBOX_SLOTS];
  _Alignas(64) unsigned char data[DC_PIPE_BYTES]; /* cap bytes of it */
} dc_pipe;

typedef struct dc_shm_seg {
  void *base;
  size_t bytes;
  size_t stride; /* bytes from one pipe to the next */
  size_t cap;    /* bytes each pipe's data holds: dc_pipe_cap */
  char name[DC_SHM_NAME_BYTES];
  int owner; /* created by this process: unlink it */
  int unlinked;
} dc_shm_seg;

/* Same value on every process of one host for one user: boot id, network
 * namespace (test "hosts" are namespaces) and uid. */
uint64_t dc_host_key(void);

/* DISTCOMM_SHM is not "0". */
int dc_shm_enabled(void);

/* DISTCOMM_CMA is not "0": single copy between same-host peers allowed. */
int dc_cma_enabled(void);
/* DISTCOMM_CMA is "1": single copy wherever it can, without measuring
 * whether the pipes are faster (algo/tune.h). */
int dc_cma_forced(void);
/* process_vm_readv of len bytes at src in process pid (-1, errno). */
ssize_t dc_cma_read(int pid, void *dst, uint64_t src, size_t len);

/* Segment names: DC_SHM_PREFIX and 128 random bits in hex, so that
 * another user can neither guess nor squat one. */
dc_status dc_shm_new_name(char out[DC_SHM_NAME_BYTES]);
/* name (from a peer: at most cap bytes are looked at) ends within cap and
 * is DC_SHM_PREFIX then letters, digits, '-' or '_'. */
int dc_shm_name_ok(const char *name, size_t cap);

/* The pid for single copy comes from the kernel, not from the peer's word:
 * a rank listens on an abstract Unix socket (name: a fresh segment-style
 * name, written to name; "" on failure) and its peers read its pid with
 * SO_PEERCRED. dc_cred_listen returns the fd to close after set-up, or -1;
 * dc_cred_pid the listener's pid when it runs as our user, or -1. */
int dc_cred_listen(char name[DC_SHM_NAME_BYTES]);
pid_t dc_cred_pid(const char *name, size_t cap);

/* Bytes each pipe of a segment of npipes pipes holds: the same for the
 * rank that creates it and those that attach it. */
size_t dc_pipe_cap(size_t npipes);
size_t dc_shm_pipes_budget(size_t npipes); /* bytes for npipes' data */

/* Attaching checks the name, and that the segment is ours (owner, no
 * group or other bits) and of the expected size. */
dc_status dc_shm_create(dc_shm_seg *s, const char *name, size_t npipes,
                        char *err, size_t errlen);
dc_status dc_shm_attach(dc_shm_seg *s, const char *name, size_t npipes,
                        char *err, size_t errlen);
void dc_shm_unlink(dc_shm_seg *s);
void dc_shm_close(dc_shm_seg *s); /* unlink if ours and not yet, unmap */

static inline dc_pipe *dc_shm_pipe(const dc_shm_seg *s, size_t i) {
  return (dc_pipe *)((char *)s->base + i * s->stride);
}

/* cap is the pipe's size as both ends computed it (the segment's cap):
 * never read from the shared header, so a peer cannot make us write or
 * read outside the pipe, and making a segment writes no header.
 *
 * Write what fits of the iovecs; 0 when the pipe is full. *tail is the
 * producer's own copy of the consumer's tail: it is re-read from the pipe
 * only when the pipe looks full, which saves a cache-line transfer per
 * message (start it at 0). */
size_t dc_pipe_write(dc_pipe *p, size_t cap, uint64_t *tail,
                     const struct iovec *iov, int n);
/* dc_pipe_write's answer when the pipe's shared tail and head are more than
 * cap apart: the peer wrote them out of range (nothing was written). */
#define DC_PIPE_BAD ((size_t)-1)
/* Read up to n bytes; 0 when the pipe is empty. */
size_t dc_pipe_read(dc_pipe *p, size_t cap, void *dst, size_t n);
/* Readable bytes contiguous at the tail (for reducing in place). */
size_t dc_pipe_peek(dc_pipe *p, size_t cap, const unsigned char **at);
void dc_pipe_consume(dc_pipe *p, size_t n);
/* Copy n readable bytes at the tail without consuming them; 0 when fewer
 * than n are there. */
size_t dc_pipe_look(dc_pipe *p, size_t cap, void *dst, size_t n);

/* Mailbox beside the pipe, for frames whose payload fits a slot. A frame
 * goes by mailbox exactly when its payload is at most DC_MBOX_PAYLOAD, so
 * both ends know where to look; frames stay in order because a connection
 * runs one frame per direction at a time. *sent counts the producer's
 * messages and *taken is its copy of the consumer's count (start both at
 * 0). Returns 0 when every slot is still unread. */
int dc_mbox_put(dc_pipe *p, uint64_t *sent, uint64_t *taken, const void *hdr,
                const void *data, size_t len);
/* The consumer's next message (its got-th), or NULL while there is none. */
static inline const dc_mbox_slot *dc_mbox_peek(dc_pipe *p, uint64_t got) {
  const dc_mbox_slot *m = &p->mbox[got & (DC_MBOX_SLOTS - 1)];
  uint32_t want = (uint32_t)(got + 1);
  return atomic_load_explicit(&m->flag, memory_order_acquire) == want ? m
                                                                      : NULL;
}
/* Done with the message from dc_mbox_peek: its slot may be reused. */
static inline void dc_mbox_take(dc_pipe *p, uint64_t *got) {
  atomic_store_explicit(&p->taken, ++*got, memory_order_release);
}

#endif
