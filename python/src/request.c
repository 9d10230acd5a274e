/* distcomm.Request: a non-blocking op (dc_i*) and the buffers it uses.
 * The request holds the buffer views (so the arrays stay alive and
 * unresized) and the group wrapper until it completes; wait() releases the
 * GIL and Ctrl-C interrupts it (the group's poll fires, the request fails
 * with DC_ERR_INTERRUPTED and the group is poisoned, as for a blocking op). */
#include <string.h>

#include "pydc.h"

typedef struct {
  PyObject_HEAD dc_request *r;
  PyObject *group;   /* the Group wrapper */
  PyObject *result;  /* what wait() returns */
  PyObject *convert; /* NULL, or applied to result once, on success */
  Py_buffer in, out;
  int has_in, has_out;
  int done;
  int detached; /* wait_detached() is waiting on it (GIL released) */
  size_t *v;    /* all_to_allv: send counts, offsets, recv counts, offsets */
  dc_status status;
  char err[512];
} pydc_request;

static void release(pydc_request *self) {
  if (self->has_in)
    PyBuffer_Release(&self->in);
  if (self->has_out)
    PyBuffer_Release(&self->out);
  self->has_in = self->has_out = 0;
}

/* The request completed: keep its outcome, free it and the views. */
static void finish(pydc_request *self, dc_status st) {
  self->done = 1;
  self->status = st;
  snprintf(self->err, sizeof self->err, "%s", dc_request_error(self->r));
  dc_request_free(self->r); /* completed: returns at once */
  self->r = NULL;
  release(self);
  PyMem_RawFree(self->v);
  self->v = NULL;
}

static void request_dealloc(pydc_request *self) {
  if (self->r) { /* still in flight: the buffers are ours until it ends */
    dc_request *r = self->r;
    Py_BEGIN_ALLOW_THREADS dc_wait(r);
    Py_END_ALLOW_THREADS dc_request_free(
        r); /* done: under the GIL, like every issue */
  }
  release(self);
  PyMem_RawFree(self->v);
  Py_XDECREF(self->group);
  Py_XDECREF(self->result);
  Py_XDECREF(self->convert);
  PyObject_Free(self);
}

static PyObject *outcome(pydc_request *self) {
  if (self->status != DC_OK)
    return pydc_raise(self->status, self->err);
  if (self->convert) { /* e.g. numpy -> mx.array, kept for the next wait() */
    PyObject *res = PyObject_CallOneArg(self->convert, self->result);
    if (!res)
      return NULL;
    Py_SETREF(self->result, res);
    Py_CLEAR(self->convert);
  }
  Py_INCREF(self->result);
  return self->result;
}

static int not_detached(pydc_request *self) {
  if (!self->detached)
    return 0;
  PyErr_SetString(PyExc_RuntimeError,
                  "distcomm: another thread is waiting on this request "
                  "(wait_detached)");
  return -1;
}

static PyObject *request_wait(pydc_request *self, PyObject *unused) {
  (void)unused;
  if (not_detached(self) < 0)
    return NULL;
  if (self->done)
    return outcome(self);
  pydc_group *grp = (pydc_group *)self->group;
  int claimed = grp->g != NULL; /* a freed group waited for us already */
  if (claimed && pydc_enter(grp) < 0)
    return NULL;
  dc_request *r = self->r;
  dc_status st;
  Py_BEGIN_ALLOW_THREADS st = dc_wait(r);
  Py_END_ALLOW_THREADS if (claimed) pydc_leave(grp);
  finish(self, st);
  if (st == DC_OK && PyErr_Occurred()) /* Ctrl-C as it completed */
    return NULL;
  return outcome(self);
}

/* wait() for a thread that only waits (distcomm.torch's completion thread):
 * the group is not claimed, so the thread that uses it goes on issuing ops
 * meanwhile (the library's queue is locked; the request may run here when it
 * is the head nobody runs yet, in order, as dc_wait does). Bounded as wait()
 * is. While it waits, wait() and is_completed() on the request raise. */
static PyObject *request_wait_detached(pydc_request *self, PyObject *unused) {
  (void)unused;
  if (not_detached(self) < 0)
    return NULL;
  if (self->done)
    return outcome(self);
  self->detached = 1;
  dc_request *r = self->r;
  dc_status st;
  Py_BEGIN_ALLOW_THREADS st = dc_wait(r);
  Py_END_ALLOW_THREADS self->detached = 0;
  finish(self, st);
  return outcome(self);
}

static PyObject *request_is_completed(pydc_request *self, PyObject *unused) {
  (void)unused;
  if (not_detached(self) < 0)
    return NULL;
  if (!self->done) {
    int done = 0;
    dc_status st = dc_test(self->r, &done);
    if (done)
      finish(self, st);
  }
  return PyBool_FromLong(self->done);
}

static PyMethodDef request_methods[] = {
    {"wait", (PyCFunction)request_wait, METH_NOARGS,
     "Wait for the op (GIL released, Ctrl-C interrupts); returns its result "
     "or raises its error."},
    {"wait_detached", (PyCFunction)request_wait_detached, METH_NOARGS,
     "wait() for a thread that only waits: the group stays free for the "
     "thread that issues ops (no Ctrl-C; bounded by the group's timeout)."},
    {"is_completed", (PyCFunction)request_is_completed, METH_NOARGS,
     "True once the op has finished (wait() then returns at once)."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject pydc_request_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "distcomm.Request",
    .tp_basicsize = sizeof(pydc_request),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A non-blocking op (async_op=True): wait(), is_completed().",
    .tp_dealloc = (destructor)request_dealloc,
    .tp_methods = request_methods,
};

/* Byte lengths that each kind needs, checked so that the library never
 * goes past a buffer; *count is the library's count. */
static int sizes_ok(const char *kind, pydc_request *q, size_t n, size_t es,
                    int is_root, size_t *count) {
  size_t in = q->has_in ? (size_t)q->in.len : 0;
  size_t out = q->has_out ? (size_t)q->out.len : 0;
  int ok = 1;
  if (!strcmp(kind, "all_reduce"))
    ok = in == out, *count = in / es;
  else if (!strcmp(kind, "all_gather"))
    ok = out == in * n, *count = in / es;
  else if (!strcmp(kind, "reduce_scatter"))
    ok = in == out * n, *count = out / es;
  else if (!strcmp(kind, "send"))
    *count = in / es;
  else if (!strcmp(kind, "reduce"))
    ok = !is_root || out == in, *count = in / es;
  else if (!strcmp(kind, "recv") || !strcmp(kind, "broadcast"))
    *count = out / es;
  else if (!strcmp(kind, "all_to_all"))
    ok = in == out && in % (n * es) == 0, *count = in / es / n;
  else if (!strcmp(kind, "gather"))
    ok = !is_root || out == in * n, *count = in / es;
  else if (!strcmp(kind, "scatter"))
    ok = !is_root || in == out * n, *count = out / es;
  else {
    PyErr_Format(PyExc_ValueError, "distcomm: unknown op %s", kind);
    return -1;
  }
  if (!ok || (in % es) || (out % es)) {
    PyErr_Format(PyExc_ValueError,
                 "distcomm: %s: buffers of %zu and %zu bytes do not fit "
                 "(group of %zu, %zu-byte elements)",
                 kind, in, out, n, es);
    return -1;
  }
  return 0;
}

static dc_status issue(const char *k, pydc_request *q, dc_group *g,
                       size_t count, dc_dtype t, dc_op op, int peer) {
  const void *s = q->has_in ? q->in.buf : NULL;
  void *r = q->has_out ? q->out.buf : NULL;
  if (!strcmp(k, "all_reduce"))
    return dc_iall_reduce(g, s, r, count, t, op, &q->r);
  if (!strcmp(k, "all_gather"))
    return dc_iall_gather(g, s, r, count, t, &q->r);
  if (!strcmp(k, "reduce_scatter"))
    return dc_ireduce_scatter(g, s, r, count, t, op, &q->r);
  if (!strcmp(k, "send"))
    return dc_isend(g, s, count, t, peer, &q->r);
  if (!strcmp(k, "recv"))
    return dc_irecv(g, r, count, t, peer, &q->r);
  if (!strcmp(k, "broadcast"))
    return dc_ibroadcast(g, r, count, t, peer, &q->r);
  if (!strcmp(k, "all_to_all"))
    return dc_iall_to_all(g, s, r, count, t, &q->r);
  if (!strcmp(k, "gather"))
    return dc_igather(g, s, r, count, t, peer, &q->r);
  if (!strcmp(k, "scatter"))
    return dc_iscatter(g, s, r, count, t, peer, &q->r);
  return dc_ireduce_to(g, s, r, count, t, op, peer, &q->r);
}

/* start(group, kind, send, recv, dtype, op, peer, result, convert=None)
 * -> Request. send / recv may be None where the op has no such buffer on
 * this rank; wait() returns convert(result) when convert is not None (the
 * Python layer's mx.array results). */
static PyObject *py_start(PyObject *m, PyObject *args) {
  (void)m;
  pydc_group *grp;
  const char *kind;
  PyObject *send_obj, *recv_obj, *result, *convert = Py_None;
  int code, op, peer;
  if (!PyArg_ParseTuple(args, "O!sOOiiiO|O:start", &pydc_group_type, &grp,
                        &kind, &send_obj, &recv_obj, &code, &op, &peer, &result,
                        &convert))
    return NULL;
  size_t es, count = 0;
  int reduces = !strcmp(kind, "all_reduce") ||
                !strcmp(kind, "reduce_scatter") || !strcmp(kind, "reduce");
  if (pydc_check_dtype(code, &es) < 0 || (reduces && pydc_check_op(op) < 0) ||
      pydc_enter(grp) < 0)
    return NULL;
  pydc_leave(grp);
  pydc_request *q = PyObject_New(pydc_request, &pydc_request_type);
  if (!q)
    return NULL;
  q->r = NULL, q->has_in = q->has_out = 0, q->done = 0, q->err[0] = '\0';
  q->detached = 0, q->v = NULL;
  Py_INCREF(grp);
  q->group = (PyObject *)grp;
  Py_INCREF(result);
  q->result = result;
  q->convert = convert == Py_None ? NULL : Py_NewRef(convert);
  if (send_obj != Py_None) {
    if (pydc_get_buffer(send_obj, &q->in, 0, "the input") < 0)
      goto fail;
    q->has_in = 1;
  }
  if (recv_obj != Py_None) {
    if (pydc_get_buffer(recv_obj, &q->out, 1, "the output") < 0)
      goto fail;
    q->has_out = 1;
  }
  int is_root = peer == dc_group_rank(grp->g);
  if (sizes_ok(kind, q, (size_t)dc_group_size(grp->g), es, is_root, &count) < 0)
    goto fail;
  if (pydc_enter(grp) < 0)
    goto fail;
  dc_status st = issue(kind, q, grp->g, count, (dc_dtype)code, (dc_op)op, peer);
  pydc_leave(grp);
  if (st != DC_OK) {
    pydc_raise(st, dc_last_error()); /* a refused dc_i* call */
    goto fail;
  }
  return (PyObject *)q;
fail:
  Py_DECREF(q);
  return NULL;
}

/* n sizes from a sequence of non-negative ints into v; -1 with an error. */
static int read_sizes(PyObject *seq, size_t n, size_t *v, const char *what) {
  PyObject *f = PySequence_Fast(seq, "distcomm: all_to_allv: counts and "
                                     "offsets must be sequences of ints");
  if (!f)
    return -1;
  int rc = 0;
  if ((size_t)PySequence_Fast_GET_SIZE(f) != n) {
    PyErr_Format(PyExc_ValueError,
                 "distcomm: all_to_allv: %zd %s for a group of %zu",
                 PySequence_Fast_GET_SIZE(f), what, n);
    rc = -1;
  }
  for (size_t i = 0; rc == 0 && i < n; i++) {
    v[i] = PyLong_AsSize_t(PySequence_Fast_GET_ITEM(f, (Py_ssize_t)i));
    if (v[i] == (size_t)-1 && PyErr_Occurred())
      rc = -1;
  }
  Py_DECREF(f);
  return rc;
}

/* Every block (count c[i] at offset o[i], elements) lies in len elements. */
static int blocks_fit(const size_t *c, const size_t *o, size_t n, size_t len,
                      const char *what) {
  for (size_t i = 0; i < n; i++)
    if (o[i] > len || c[i] > len - o[i]) {
      PyErr_Format(PyExc_ValueError,
                   "distcomm: all_to_allv: %s block %zu (%zu elements at %zu) "
                   "goes past the buffer of %zu elements",
                   what, i, c[i], o[i], len);
      return -1;
    }
  return 0;
}

/* start_v(group, send, send_counts, send_offsets, recv, recv_counts,
 * recv_offsets, dtype, result) -> Request: dc_iall_to_allv, counts and
 * offsets in elements (the request keeps its copy of them). */
static PyObject *py_start_v(PyObject *m, PyObject *args) {
  (void)m;
  pydc_group *grp;
  PyObject *send_obj, *recv_obj, *sc, *so, *rc, *ro, *result;
  int code;
  if (!PyArg_ParseTuple(args, "O!OOOOOOiO:start_v", &pydc_group_type, &grp,
                        &send_obj, &sc, &so, &recv_obj, &rc, &ro, &code,
                        &result))
    return NULL;
  size_t es;
  if (pydc_check_dtype(code, &es) < 0 || pydc_enter(grp) < 0)
    return NULL;
  pydc_leave(grp);
  size_t n = (size_t)dc_group_size(grp->g);
  pydc_request *q = PyObject_New(pydc_request, &pydc_request_type);
  if (!q)
    return NULL;
  q->r = NULL, q->has_in = q->has_out = 0, q->done = 0, q->err[0] = '\0';
  q->detached = 0, q->convert = NULL;
  Py_INCREF(grp);
  q->group = (PyObject *)grp;
  Py_INCREF(result);
  q->result = result;
  q->v = PyMem_RawMalloc(4 * n * sizeof *q->v);
  if (!q->v) {
    PyErr_NoMemory();
    goto fail;
  }
  if (read_sizes(sc, n, q->v, "send counts") < 0 ||
      read_sizes(so, n, q->v + n, "send offsets") < 0 ||
      read_sizes(rc, n, q->v + 2 * n, "recv counts") < 0 ||
      read_sizes(ro, n, q->v + 3 * n, "recv offsets") < 0)
    goto fail;
  if (pydc_get_buffer(send_obj, &q->in, 0, "the input") < 0)
    goto fail;
  q->has_in = 1;
  if (pydc_get_buffer(recv_obj, &q->out, 1, "the output") < 0)
    goto fail;
  q->has_out = 1;
  if (blocks_fit(q->v, q->v + n, n, (size_t)q->in.len / es, "send") < 0 ||
      blocks_fit(q->v + 2 * n, q->v + 3 * n, n, (size_t)q->out.len / es,
                 "recv") < 0)
    goto fail;
  if (pydc_enter(grp) < 0)
    goto fail;
  dc_status st =
      dc_iall_to_allv(grp->g, q->in.buf, q->v, q->v + n, q->out.buf,
                      q->v + 2 * n, q->v + 3 * n, (dc_dtype)code, &q->r);
  pydc_leave(grp);
  if (st != DC_OK) {
    pydc_raise(st, dc_last_error()); /* a refused dc_i* call */
    goto fail;
  }
  return (PyObject *)q;
fail:
  Py_DECREF(q);
  return NULL;
}

PyMethodDef pydc_request_methods[] = {
    {"start", py_start, METH_VARARGS,
     "start(group, kind, send, recv, dtype, op, peer, result, convert=None) "
     "-> Request"},
    {"start_v", py_start_v, METH_VARARGS,
     "start_v(group, send, send_counts, send_offsets, recv, recv_counts, "
     "recv_offsets, dtype, result) -> Request (all_to_allv, in elements)"},
    {NULL, NULL, 0, NULL},
};
