/* Requests and the progress thread. One thread per group, started by the
 * first non-blocking call, runs the queued requests one at a time in issue
 * order (that order is what keeps ranks in step) by calling the blocking
 * public functions; it sleeps (on a futex) when the queue is empty. The group
 * belongs to whoever runs the head request: blocking calls drain the queue
 * first, so nothing else touches it meanwhile.
 *
 * Callers run requests too: dc_wait, and a blocking call draining the
 * queue, claim each head request nobody runs yet (busy) and run it on the
 * caller's thread, in order, instead of sleeping until the thread has.
 *
 * The small-request path (issue, then wait at once) would otherwise pay
 * for waking the thread (a futex wake per request, and on a loaded host a
 * thread that competes for the core) although the caller runs the request
 * itself. So the doorbell adapts (see ring()):
 *   eager  every issue wakes the thread, which starts the request at once;
 *          the mode a group starts in.
 *   lazy   entered after LAZY_AFTER waits in a row that found their request
 *          still unstarted at the head (the caller waited at once, so the
 *          wake bought nothing). Issue wakes no one unless a request is
 *          already queued; the thread instead looks on a timer and
 *          starts a head request it saw at its previous look (the period
 *          doubles from LAZY_POLL_US to LAZY_POLL_MAX_US while the looks
 *          find nothing to start, and drops back when one sees a request
 *          waiting, so a request nobody waits for still starts within
 *          LAZY_POLL_MAX_US + LAZY_POLL_US), which
 *          also puts the group back in eager mode. So does a dc_wait that
 *          found its request started by the thread, a dc_test on a request
 *          not done, and LAZY_IDLE_POLLS looks in a row at an empty queue
 *          with no request issued since the last look (the thread then
 *          sleeps until woken; idle, it burns no core).
 * The fast path, dc_wait on a request alone in the queue and not started
 * (the small op waited for at once), takes the lock once: it claims the
 * request (busy = FAST), runs it unlocked, stores the result and sets done
 * (release) without the lock; the next lock() by anyone pops it (settle).
 * As nobody is woken then, sleepers look every FAST_LOOK_NS while a FAST
 * request runs (only a second thread waiting on the group, against the
 * rules, could sleep meanwhile). Finished requests go to a short free list
 * (no malloc per request); a done request is freed without the lock (the
 * free list and reference count are the user thread's). With the lazy
 * doorbell that is two mutex pairs and no system call per small request.
 * bench/ab/request_cost.sh measures it (bench/train/overlap.md). */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "compose/async.h"
#include "core/group.h"

enum {
  LAZY_AFTER = 4,          /* quick waits in a row that make a group lazy */
  LAZY_POLL_US = 500,      /* the lazy thread's first look period */
  LAZY_POLL_MAX_US = 4000, /* ... doubled by each fruitless look up to this */
  LAZY_IDLE_POLLS = 64,    /* empty looks before the thread sleeps for good */
  SPARE_MAX = 16,          /* finished requests kept for reuse */
  FAST = 2,                /* a->busy of dc_wait's fast path */
};
#define FAST_LOOK_NS (1000 * 1000L)

typedef struct dc_async {
  atomic_uint mu;   /* lock over everything below (lock/unlock):
                       0 free, 1 held, 2 held and maybe waited for */
  atomic_uint wseq; /* futex: the thread sleeps on it (ring, stop) */
  atomic_uint dseq; /* futex: waiters sleep on it (a request done) */
  int kick_work;    /* unlock wakes the thread */
  int kick_done;    /* unlock wakes the waiters */
  int nwait;        /* waiters asleep on dseq */
  pthread_t thread;
  dc_group *g;
  dc_request *head, *tail; /* head runs next, or now when busy */
  /* The group's user thread's (issue, dc_request_free, release; "a group
   * is used by one thread at a time"), not under mu: */
  dc_request *spare; /* free list (SPARE_MAX at most), via spare_next */
  int nspare;
  int refs;             /* the group's + one per request not freed */
  dc_request *deferred; /* last run by dc_wait's fast path: maybe still
                           the (done) head, so never handed to free() */
  /* under mu: */
  int busy; /* a thread (worker or a waiter) is running head;
               FAST: dc_wait's fast path, which wakes no one when
               done, so sleepers look every FAST_LOOK_NS */
  int stop;
  int lazy;                /* the doorbell's mode (see the top of the file) */
  int go;                  /* the thread may start what is queued now */
  int quick;               /* waits in a row that ran their own request */
  int sleeping;            /* the thread sleeps on wseq */
  uint64_t seq;            /* last request number given */
  uint64_t seen;           /* head's number at the lazy thread's last look */
  long look_us;            /* the lazy thread's look period now */
  dc_status failed;        /* g->failed as last seen after a request */
  dc_interrupt_fn user_fn; /* the group's interrupt, polled by waiters */
  void *user_arg;
  atomic_int cancel; /* a waiter's interrupt fired */
} dc_async;

struct dc_request {
  dc_async *a;
  dc_rq_args args;
  const char *name;
  dc_request *next;       /* the queue (under mu) */
  dc_request *spare_next; /* the spare list (the user thread's) */
  uint64_t seq;
  atomic_int done; /* set last, with release order */
  dc_status status;
  char err[512];
};

static _Thread_local int in_worker;

/* The lock is the futex mutex of Drepper's "Futexes are tricky" (one
 * compare-exchange to take it, one exchange to drop it, a system call only
 * when contended): an inlined pthread mutex without its bookkeeping, ~10 ns
 * a small request cheaper. A spin lock (unlock a plain store) was cheaper
 * still, but a spinner whose holder is off its core can only yield or
 * sleep: with sched_yield valgrind (one thread at a time) all but stopped
 * (async_test mixed > 300 s, 6 s before); with a short sleep a caller
 * polling dc_test starved the thread (6x slower). Sleeping is on futexes
 * too (wseq, dseq), woken after the lock is dropped. */
static void settle(dc_async *a);
static int futex_sleep(atomic_uint *w, unsigned v, long ns);

static void futex_wake(atomic_uint *w, int n) {
  syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static void lock(dc_async *a) {
  unsigned c = 0;
  if (!atomic_compare_exchange_strong_explicit(
          &a->mu, &c, 1, memory_order_acquire, memory_order_relaxed)) {
    if (c != 2)
      c = atomic_exchange_explicit(&a->mu, 2, memory_order_acquire);
    while (c != 0) {
      futex_sleep(&a->mu, 2, 0);
      c = atomic_exchange_explicit(&a->mu, 2, memory_order_acquire);
    }
  }
  settle(a);
}

/* Sleep while *w == v, at most ns (0: no limit). Returns 1 on timeout. */
static int futex_sleep(atomic_uint *w, unsigned v, long ns) {
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
  long rc =
      syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, ns ? &ts : NULL, NULL, 0);
  return rc == -1 && errno == ETIMEDOUT;
}

static void unlock(dc_async *a) {
  int kw = a->kick_work, kd = a->kick_done;
  a->kick_work = a->kick_done = 0;
  if (atomic_exchange_explicit(&a->mu, 0, memory_order_release) == 2)
    futex_wake(&a->mu, 1);
  if (kw)
    futex_wake(&a->wseq, 1);
  if (kd)
    futex_wake(&a->dseq, INT_MAX);
}

/* Wake the thread if it sleeps (a->mu held). */
static void wake_worker(dc_async *a) {
  if (a->sleeping) {
    a->sleeping = 0;
    atomic_fetch_add_explicit(&a->wseq, 1, memory_order_relaxed);
    a->kick_work = 1;
  }
}

/* Installed as the group's interrupt while the thread runs a request. */
static int cancelled(void *arg) {
  dc_async *a = arg;
  return atomic_load(&a->cancel);
}

static dc_status run(dc_group *g, const dc_request *r) {
  const dc_rq_args *x = &r->args;
  switch (x->kind) {
  case DC_RQ_ALL_REDUCE:
    return dc_all_reduce(g, x->send, x->recv, x->count, x->dtype, x->op);
  case DC_RQ_ALL_GATHER:
    return dc_all_gather(g, x->send, x->recv, x->count, x->dtype);
  case DC_RQ_REDUCE_SCATTER:
    return dc_reduce_scatter(g, x->send, x->recv, x->count, x->dtype, x->op);
  case DC_RQ_SEND:
    return dc_send(g, x->send, x->count, x->dtype, x->peer);
  case DC_RQ_RECV:
    return dc_recv(g, x->recv, x->count, x->dtype, x->peer);
  case DC_RQ_BROADCAST:
    return dc_broadcast(g, x->recv, x->count, x->dtype, x->peer);
  case DC_RQ_BARRIER:
    return dc_barrier(g);
  case DC_RQ_ALL_TO_ALL:
    return dc_all_to_all(g, x->send, x->recv, x->count, x->dtype);
  case DC_RQ_ALL_TO_ALLV:
    return dc_all_to_allv(g, x->send, x->scnt, x->soff, x->recv, x->rcnt,
                          x->roff, x->dtype);
  case DC_RQ_GATHER:
    return dc_gather(g, x->send, x->recv, x->count, x->dtype, x->peer);
  case DC_RQ_SCATTER:
    return dc_scatter(g, x->send, x->recv, x->count, x->dtype, x->peer);
  case DC_RQ_REDUCE_TO:
    return dc_reduce_to(g, x->send, x->recv, x->count, x->dtype, x->op,
                        x->peer);
  }
  return DC_ERR_INVALID;
}

/* A fired interrupt poisons the group, as it does a blocking call, even
 * when the request it hit finished before the thread noticed. */
static dc_status run_one(dc_async *a, const dc_request *r) {
  dc_group *g = a->g;
  if (atomic_load(&a->cancel) && g->failed == DC_OK)
    return dc_fail_as(g, r->name, DC_ERR_INTERRUPTED,
                      "interrupted while waiting");
  return run(g, r);
}

/* Asynchronous signals stay with the caller's threads (Python's Ctrl-C). */
static void block_signals(void) {
  static const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,  SIGALRM,
                             SIGCHLD, SIGUSR1, SIGUSR2, SIGWINCH, SIGPIPE};
  sigset_t set;
  sigemptyset(&set);
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    sigaddset(&set, sigs[i]);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* Let the thread start what is queued (a->mu held). Costs a futex wake
 * only when the thread sleeps. */
static void ring(dc_async *a) {
  a->go = 1;
  wake_worker(a);
}

/* The lazy thread looks less often while its looks find nothing to
 * start: on a VM every timed wake-up costs the ranks spinning on the same
 * cores far more than the look itself (8 B iall_sum + wait, 2 ranks on 2
 * cores: 2.6x the blocking call with a look every 500 us). A request
 * nobody waits for still starts within one period plus LAZY_POLL_US. */
static void slower(dc_async *a) {
  a->look_us =
      a->look_us * 2 > LAZY_POLL_MAX_US ? LAZY_POLL_MAX_US : a->look_us * 2;
}

/* A dc_wait ran its own request, unstarted at the head (a->mu held):
 * after LAZY_AFTER in a row the group goes lazy, as waking the thread at
 * each issue bought nothing. */
static void waited_at_once(dc_async *a) {
  if (a->lazy || ++a->quick < LAZY_AFTER)
    return;
  a->lazy = 1;
  a->seen = 0;
  a->look_us = LAZY_POLL_US;
  wake_worker(a); /* to look on its timer */
}

/* Back to eager mode (a->mu held): the next issue rings. */
static void eager(dc_async *a) {
  a->lazy = 0;
  a->quick = 0;
}

/* Pop the done head r (a->mu held). */
static void pop(dc_async *a, dc_request *r) {
  dc_group *g = a->g;
  a->head = r->next;
  a->busy = 0;
  if (!a->head) {
    a->tail = NULL;
    a->go = 0;
    if (atomic_load(&a->cancel) && g->failed == DC_OK)
      dc_fail_as(g, r->name, DC_ERR_INTERRUPTED, "interrupted while waiting");
  }
  a->failed = g->failed;
}

/* dc_wait's fast path finishes without the lock: it sets done and leaves
 * its request at the head, busy, for whoever takes the lock next to pop
 * here (every lock() does). */
static void settle(dc_async *a) {
  dc_request *r = a->head;
  if (r && atomic_load_explicit(&r->done, memory_order_acquire))
    pop(a, r);
}

/* Record r's result and pop it (a->mu held); wake waiters. */
static void finish(dc_async *a, dc_request *r, dc_status st) {
  r->status = st;
  if (st != DC_OK)
    snprintf(r->err, sizeof r->err, "%s", a->g->err);
  pop(a, r);
  atomic_store_explicit(&r->done, 1, memory_order_release);
  if (a->nwait) {
    atomic_fetch_add_explicit(&a->dseq, 1, memory_order_relaxed);
    a->kick_done = 1;
  }
}

static void *worker(void *arg) {
  dc_async *a = arg;
  dc_group *g = a->g;
  int idle = 0;
  uint64_t issued = 0; /* a->seq at the last look */
  in_worker = 1;
  block_signals();
  lock(a);
  for (;;) {
    dc_request *r = a->head;
    if (r && !a->busy && a->go) {
      a->busy = 1;
      idle = 0;
      g->interrupt = cancelled;
      g->interrupt_arg = a;
      unlock(a);
      dc_status st = run_one(a, r);
      lock(a);
      g->interrupt = a->user_fn;
      g->interrupt_arg = a->user_arg;
      finish(a, r, st);
      continue;
    }
    if (a->stop && !a->head)
      break; /* release drained the queue first */
    long ns = a->lazy && !a->stop ? a->look_us * 1000L : 0;
    if (!ns && a->busy == FAST)
      ns = FAST_LOOK_NS;
    unsigned v = atomic_load_explicit(&a->wseq, memory_order_relaxed);
    a->sleeping = 1;
    unlock(a);
    int timed_out = futex_sleep(&a->wseq, v, ns);
    lock(a);
    a->sleeping = 0;
    if (!timed_out || !a->lazy)
      continue;
    r = a->head;
    if (a->seq != issued) /* requests came and went: not idle */
      idle = 0;
    issued = a->seq;
    if (!r) {
      a->seen = 0;
      slower(a);
      if (++idle >= LAZY_IDLE_POLLS)
        eager(a); /* nothing to do: sleep until the next issue rings */
    } else if (!a->busy && r->seq == a->seen) {
      /* queued for a whole look period and nobody waits for it: start it,
       * and start the next ones at once (the caller computes meanwhile) */
      eager(a);
      a->go = 1;
    } else if (!a->busy) {
      a->seen = r->seq; /* look again soon: start it if still waiting */
      a->look_us = LAZY_POLL_US;
    } else {
      slower(a); /* a waiter runs it: the caller waited at once */
    }
  }
  unlock(a);
  return NULL;
}

/* Run the claimed head r on the caller's thread (a->mu held on entry and
 * exit). The group keeps the user's interrupt, as in a blocking call; the
 * blocking function must not drain the queue r is still at the head of. */
static void run_here(dc_async *a, dc_request *r) {
  a->busy = 1;
  unlock(a);
  int was = in_worker;
  in_worker = 1;
  dc_status st = run_one(a, r);
  in_worker = was;
  lock(a);
  finish(a, r, st);
}

static void destroy(dc_async *a) {
  while (a->spare) {
    dc_request *r = a->spare;
    a->spare = r->spare_next;
    free(r);
  }
  free(a);
}

static void unref(dc_async *a) {
  if (--a->refs == 0)
    destroy(a);
}

/* What the group waits behind (core/group.h), registered with the thread. */
static const dc_inflight gate = {dc_async_drain, dc_async_set_interrupt,
                                 dc_async_release};

static dc_status start(dc_group *g, const char *name) {
  dc_async *a = calloc(1, sizeof *a);
  g->op_name = name;
  if (!a)
    return dc_fail(g, DC_ERR_NOMEM, "no memory for the progress thread");
  a->g = g;
  a->refs = 1;
  a->user_fn = g->interrupt;
  a->user_arg = g->interrupt_arg;
  int rc = pthread_create(&a->thread, NULL, worker, a);
  if (rc != 0) {
    unref(a);
    return dc_fail(g, DC_ERR_SYSTEM, "cannot start the progress thread: %s",
                   strerror(rc));
  }
  g->async = a;
  g->inflight = &gate;
  return DC_OK;
}

dc_status dc_async_issue(dc_group *g, const char *name, const dc_rq_args *x,
                         dc_request **req) {
  if (req)
    *req = NULL;
  if (!g || !req)
    return dc_init_fail(DC_ERR_INVALID, "%s: %s is NULL", name,
                        g ? "req" : "group");
  if (!g->async) {
    if (g->failed != DC_OK) /* no thread yet: the group is ours to read */
      return dc_init_fail(g->failed, "%s", g->err);
    dc_status st = start(g, name);
    if (st != DC_OK)
      return st;
  }
  dc_async *a = g->async;
  /* spares are reused under the lock: the one dc_wait's fast path ran
   * may be the head until lock() pops it */
  lock(a);
  dc_request *r = a->spare;
  if (r) {
    a->spare = r->spare_next;
    a->nspare--;
  } else {
    unlock(a);
    r = malloc(sizeof *r);
    if (!r) /* the group may be the thread's: the detail goes aside */
      return dc_init_fail(DC_ERR_NOMEM, "%s: no memory for a request", name);
    lock(a);
  }
  dc_status failed = a->failed;
  if (failed != DC_OK) {
    /* poisoned: g->err keeps the first failure, never rewritten since */
    dc_init_fail(failed, "%s", a->g->err);
    r->spare_next = a->spare;
    a->spare = r;
    a->nspare++;
    unlock(a);
    return failed;
  }
  r->a = a;
  r->args = *x;
  r->name = name;
  r->next = NULL;
  r->seq = ++a->seq;
  atomic_init(&r->done, 0);
  r->status = DC_OK;
  r->err[0] = '\0';
  if (a->tail) {
    a->tail->next = r;
    ring(a); /* one is already waiting: the caller is not waiting at once */
  } else {
    a->head = r;
    if (!a->lazy)
      ring(a);
  }
  a->tail = r;
  unlock(a);
  a->refs++;
  *req = r;
  return DC_OK;
}

/* Wait (a->mu held) for a request to complete or a->done to be signalled,
 * polling the caller's interrupt every 100 ms. Bounded: the request
 * running makes progress or fails within the group's timeout. */
static void wait_step(dc_async *a) {
  dc_interrupt_fn fn = a->user_fn;
  void *arg = a->user_arg;
  unsigned v = atomic_load_explicit(&a->dseq, memory_order_relaxed);
  long ns = a->busy == FAST ? FAST_LOOK_NS : fn ? 100 * 1000 * 1000L : 0;
  a->nwait++;
  unlock(a);
  if (fn && !atomic_load(&a->cancel) && fn(arg))
    atomic_store(&a->cancel, 1);
  futex_sleep(&a->dseq, v, ns);
  lock(a);
  a->nwait--;
}

/* Until r is done (or the queue empty when r is NULL), run each head
 * request nobody runs yet here and wait for the ones somebody runs
 * (a->mu held). Returns whether r was run here. */
static int complete_locked(dc_async *a, dc_request *r) {
  int here = 0;
  while (r ? !r->done : a->head != NULL) {
    dc_request *h = a->head;
    if (h && !a->busy && !in_worker) {
      run_here(a, h);
      here |= h == r;
    } else {
      wait_step(a);
    }
  }
  return here;
}

void dc_async_drain(dc_group *g) {
  if (!g || !g->async || in_worker)
    return;
  dc_async *a = g->async;
  lock(a);
  complete_locked(a, NULL);
  /* an interrupt that fired here poisoned the group: g->failed says so */
  unlock(a);
}

void dc_async_set_interrupt(dc_group *g) {
  dc_async *a = g->async;
  if (!a)
    return;
  lock(a);
  a->user_fn = g->interrupt;
  a->user_arg = g->interrupt_arg;
  unlock(a);
}

void dc_async_release(dc_group *g) {
  dc_async *a = g->async;
  if (!a)
    return;
  lock(a);
  complete_locked(a, NULL);
  a->stop = 1;
  wake_worker(a);
  unlock(a);
  pthread_join(a->thread, NULL);
  g->async = NULL;
  unref(a);
}

dc_status dc_wait(dc_request *r) {
  if (!r)
    return dc_init_fail(DC_ERR_INVALID, "wait: request is NULL");
  dc_async *a = r->a;
  lock(a);
  if (!r->done && a->head == r && !a->busy && !r->next && !in_worker) {
    /* the fast path: r alone in the queue and not started. Run it here
     * and finish it without the lock (settle() pops it later). */
    waited_at_once(a);
    a->busy = FAST;
    a->deferred = r;
    unlock(a);
    in_worker = 1;
    dc_status st = run_one(a, r);
    in_worker = 0;
    r->status = st;
    if (st != DC_OK)
      snprintf(r->err, sizeof r->err, "%s", a->g->err);
    atomic_store_explicit(&r->done, 1, memory_order_release);
    return st;
  }
  if (!r->done) {
    int first = a->head == r && !a->busy;
    int here = complete_locked(a, r);
    if (first && here) {
      waited_at_once(a);
    } else if (!here) {
      eager(a);
    }
    if (a->head && !a->busy)
      ring(a); /* the rest progresses while the caller goes on */
  } else {
    eager(a); /* the thread ran it: the caller computed meanwhile */
  }
  dc_status st = r->status;
  unlock(a);
  return st;
}

dc_status dc_test(dc_request *r, int *done) {
  if (!r || !done)
    return dc_init_fail(DC_ERR_INVALID, "test: %s is NULL",
                        r ? "done" : "request");
  dc_async *a = r->a;
  lock(a);
  *done = r->done;
  dc_status st = r->done ? r->status : DC_OK;
  if (!r->done) {
    eager(a); /* a caller that polls computes meanwhile */
    ring(a);
  }
  unlock(a);
  return st;
}

dc_status dc_wait_all(dc_request **reqs, size_t n) {
  if (!reqs && n > 0)
    return dc_init_fail(DC_ERR_INVALID, "wait_all: requests are NULL");
  dc_status first = DC_OK;
  for (size_t i = 0; i < n; i++) {
    dc_status st = reqs[i] ? dc_wait(reqs[i]) : DC_OK;
    if (first == DC_OK)
      first = st;
  }
  return first;
}

const char *dc_request_error(const dc_request *r) {
  if (!r)
    return "";
  lock(r->a);
  const char *e = r->done ? r->err : "";
  unlock(r->a);
  return e;
}

/* No lock once r is done: the spare list and refs are the user thread's,
 * and the finisher touches r no more after setting done. */
void dc_request_free(dc_request *r) {
  if (!r)
    return;
  dc_async *a = r->a;
  if (!atomic_load_explicit(&r->done, memory_order_acquire))
    dc_wait(r);
  if (--a->refs == 0) { /* the group is gone: its queue is empty */
    free(r);
    destroy(a);
  } else if (a->nspare < SPARE_MAX || r == a->deferred) {
    r->spare_next = a->spare;
    a->spare = r;
    a->nspare++;
  } else {
    free(r);
  }
}
