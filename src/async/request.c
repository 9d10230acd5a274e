/* Requests and the progress thread. One thread per group, started by the
 * first non-blocking call, runs the queued requests one at a time in issue
 * order (that order is what keeps ranks in step) by calling the blocking
 * public functions; it sleeps on a condition variable when the queue is
 * empty. The group is the thread's while the queue is not empty: blocking
 * calls drain the queue first, so nothing else touches it meanwhile.
 * Fast path: a dc_wait on the head request that nobody runs yet claims it
 * (busy) and runs it on the caller's thread, saving the hand-off to the
 * worker and back (two wake-ups, most of a small request's cost). Order is
 * kept: only the head is ever run, by whoever claimed it. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "async/async.h"
#include "core/group.h"

typedef struct dc_async {
  pthread_mutex_t mu;
  pthread_cond_t work; /* to the thread: a request was queued, or stop */
  pthread_cond_t done; /* to waiters: a request completed */
  pthread_t thread;
  dc_group *g;
  dc_request *head, *tail; /* head runs next, or now when busy */
  int busy;          /* a thread (worker or a waiter) is running head */
  int stop;
  int refs;          /* the group's + one per request not freed */
  dc_status failed;  /* g->failed as the thread last saw it */
  dc_interrupt_fn user_fn; /* the group's interrupt, polled by waiters */
  void *user_arg;
  atomic_int cancel; /* a waiter's interrupt fired */
} dc_async;

struct dc_request {
  dc_async *a;
  dc_rq_args args;
  const char *name;
  dc_request *next;
  int done;
  dc_status status;
  char err[512];
};

static _Thread_local int in_worker;

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
  static const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGALRM,
                             SIGCHLD, SIGUSR1, SIGUSR2, SIGWINCH, SIGPIPE};
  sigset_t set;
  sigemptyset(&set);
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    sigaddset(&set, sigs[i]);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* Record r's result and pop it (a->mu held); wake waiters, and the worker
 * when a waiter ran r and more is queued. */
static void finish(dc_async *a, dc_request *r, dc_status st) {
  dc_group *g = a->g;
  r->status = st;
  if (st != DC_OK)
    snprintf(r->err, sizeof r->err, "%s", g->err);
  a->head = r->next;
  a->busy = 0;
  if (!a->head) {
    a->tail = NULL;
    if (atomic_load(&a->cancel) && g->failed == DC_OK)
      dc_fail_as(g, r->name, DC_ERR_INTERRUPTED, "interrupted while waiting");
  } else {
    pthread_cond_signal(&a->work);
  }
  a->failed = g->failed;
  r->done = 1;
  pthread_cond_broadcast(&a->done);
}

static void *worker(void *arg) {
  dc_async *a = arg;
  dc_group *g = a->g;
  in_worker = 1;
  block_signals();
  pthread_mutex_lock(&a->mu);
  for (;;) {
    while ((!a->head || a->busy) && !a->stop)
      pthread_cond_wait(&a->work, &a->mu);
    if (!a->head || a->busy)
      break; /* stop: release drained the queue first */
    dc_request *r = a->head;
    a->busy = 1;
    g->interrupt = cancelled;
    g->interrupt_arg = a;
    pthread_mutex_unlock(&a->mu);
    dc_status st = run_one(a, r);
    pthread_mutex_lock(&a->mu);
    g->interrupt = a->user_fn;
    g->interrupt_arg = a->user_arg;
    finish(a, r, st);
  }
  pthread_mutex_unlock(&a->mu);
  return NULL;
}

/* Run the claimed head r on the caller's thread (a->mu held on entry and
 * exit). The group keeps the user's interrupt, as in a blocking call; the
 * blocking function must not drain the queue r is still at the head of. */
static void run_here(dc_async *a, dc_request *r) {
  a->busy = 1;
  pthread_mutex_unlock(&a->mu);
  int was = in_worker;
  in_worker = 1;
  dc_status st = run_one(a, r);
  in_worker = was;
  pthread_mutex_lock(&a->mu);
  finish(a, r, st);
}

static void unref(dc_async *a) {
  pthread_mutex_lock(&a->mu);
  int last = --a->refs == 0;
  pthread_mutex_unlock(&a->mu);
  if (!last)
    return;
  pthread_cond_destroy(&a->work);
  pthread_cond_destroy(&a->done);
  pthread_mutex_destroy(&a->mu);
  free(a);
}

static dc_status start(dc_group *g, const char *name) {
  dc_async *a = calloc(1, sizeof *a);
  g->op_name = name;
  if (!a)
    return dc_fail(g, DC_ERR_NOMEM, "no memory for the progress thread");
  pthread_mutex_init(&a->mu, NULL);
  pthread_cond_init(&a->work, NULL);
  pthread_cond_init(&a->done, NULL);
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
      return g->failed;
    dc_status st = start(g, name);
    if (st != DC_OK)
      return st;
  }
  dc_async *a = g->async;
  dc_request *r = calloc(1, sizeof *r);
  if (!r)
    return DC_ERR_NOMEM; /* the group may be the thread's: no detail */
  r->a = a;
  r->args = *x;
  r->name = name;
  pthread_mutex_lock(&a->mu);
  dc_status failed = a->failed;
  if (failed == DC_OK) {
    a->refs++;
    if (a->tail)
      a->tail->next = r;
    else
      a->head = r;
    a->tail = r;
    pthread_cond_signal(&a->work);
  }
  pthread_mutex_unlock(&a->mu);
  if (failed != DC_OK) {
    free(r); /* poisoned: the first failure's detail stays in g->err */
    return failed;
  }
  *req = r;
  return DC_OK;
}

/* Wait (a->mu held) until r is done, or the queue is empty when r is NULL,
 * polling the caller's interrupt every 100 ms. Bounded: the request
 * running makes progress or fails within the group's timeout. */
static void wait_locked(dc_async *a, dc_request *r) {
  while (r ? !r->done : a->head != NULL) {
    if (!a->user_fn) {
      pthread_cond_wait(&a->done, &a->mu);
      continue;
    }
    dc_interrupt_fn fn = a->user_fn;
    void *arg = a->user_arg;
    pthread_mutex_unlock(&a->mu);
    if (!atomic_load(&a->cancel) && fn(arg))
      atomic_store(&a->cancel, 1);
    pthread_mutex_lock(&a->mu);
    if (r ? r->done : a->head == NULL)
      break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 100 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&a->done, &a->mu, &ts);
  }
}

void dc_async_drain(dc_group *g) {
  if (!g || !g->async || in_worker)
    return;
  dc_async *a = g->async;
  pthread_mutex_lock(&a->mu);
  wait_locked(a, NULL);
  /* an interrupt that fired here poisoned the group: g->failed says so */
  pthread_mutex_unlock(&a->mu);
}

void dc_async_set_interrupt(dc_group *g) {
  dc_async *a = g->async;
  if (!a)
    return;
  pthread_mutex_lock(&a->mu);
  a->user_fn = g->interrupt;
  a->user_arg = g->interrupt_arg;
  pthread_mutex_unlock(&a->mu);
}

void dc_async_release(dc_group *g) {
  dc_async *a = g->async;
  if (!a)
    return;
  pthread_mutex_lock(&a->mu);
  wait_locked(a, NULL);
  a->stop = 1;
  pthread_cond_signal(&a->work);
  pthread_mutex_unlock(&a->mu);
  pthread_join(a->thread, NULL);
  g->async = NULL;
  unref(a);
}

dc_status dc_wait(dc_request *r) {
  if (!r)
    return dc_init_fail(DC_ERR_INVALID, "wait: request is NULL");
  dc_async *a = r->a;
  pthread_mutex_lock(&a->mu);
  if (!r->done && a->head == r && !a->busy && !in_worker)
    run_here(a, r);
  if (!r->done)
    wait_locked(a, r);
  dc_status st = r->status;
  pthread_mutex_unlock(&a->mu);
  return st;
}

dc_status dc_test(dc_request *r, int *done) {
  if (!r || !done)
    return dc_init_fail(DC_ERR_INVALID, "test: %s is NULL",
                        r ? "done" : "request");
  pthread_mutex_lock(&r->a->mu);
  *done = r->done;
  dc_status st = r->done ? r->status : DC_OK;
  pthread_mutex_unlock(&r->a->mu);
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
  pthread_mutex_lock(&r->a->mu);
  const char *e = r->done ? r->err : "";
  pthread_mutex_unlock(&r->a->mu);
  return e;
}

void dc_request_free(dc_request *r) {
  if (!r)
    return;
  dc_wait(r);
  dc_async *a = r->a;
  free(r);
  unref(a);
}
