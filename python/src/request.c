/* distcomm.Request: a non-blocking op (dc_i*) and the buffers it uses.
 * The request holds the buffer views (so the arrays stay alive and
 * unresized) and the group wrapper until it completes; wait() releases the
 * GIL and Ctrl-C interrupts it (the group's poll fires, the request fails
 * with DC_ERR_INTERRUPTED and the group is poisoned, as for a blocking op). */
#include <string.h>

#include "pydc.h"

typedef struct {
  PyObject_HEAD
  dc_request *r;
  PyObject *group;  /* the Group wrapper */
  PyObject *result; /* what wait() returns */
  Py_buffer in, out;
  int has_in, has_out;
  int done;
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
}

static void request_dealloc(pydc_request *self) {
  if (self->r) { /* still in flight: the buffers are ours until it ends */
    dc_request *r = self->r;
    Py_BEGIN_ALLOW_THREADS
    dc_wait(r);
    Py_END_ALLOW_THREADS
    dc_request_free(r); /* done: under the GIL, like every issue */
  }
  release(self);
  Py_XDECREF(self->group);
  Py_XDECREF(self->result);
  PyObject_Free(self);
}

static PyObject *outcome(pydc_request *self) {
  if (self->status != DC_OK)
    return pydc_raise(self->status, self->err);
  Py_INCREF(self->result);
  return self->result;
}

static PyObject *request_wait(pydc_request *self, PyObject *unused) {
  (void)unused;
  if (self->done)
    return outcome(self);
  pydc_group *grp = (pydc_group *)self->group;
  int claimed = grp->g != NULL; /* a freed group waited for us already */
  if (claimed && pydc_enter(grp) < 0)
    return NULL;
  dc_request *r = self->r;
  dc_status st;
  Py_BEGIN_ALLOW_THREADS
  st = dc_wait(r);
  Py_END_ALLOW_THREADS
  if (claimed)
    pydc_leave(grp);
  finish(self, st);
  if (st == DC_OK && PyErr_Occurred()) /* Ctrl-C as it completed */
    return NULL;
  return outcome(self);
}

static PyObject *request_is_completed(pydc_request *self, PyObject *unused) {
  (void)unused;
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
                 "(group of %zu, %zu-byte elements)", kind, in, out, n, es);
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

/* start(group, kind, send, recv, dtype, op, peer, result) -> Request.
 * send / recv may be None where the op has no such buffer on this rank. */
static PyObject *py_start(PyObject *m, PyObject *args) {
  (void)m;
  pydc_group *grp;
  const char *kind;
  PyObject *send_obj, *recv_obj, *result;
  int code, op, peer;
  if (!PyArg_ParseTuple(args, "O!sOOiiiO:start", &pydc_group_type, &grp,
                        &kind, &send_obj, &recv_obj, &code, &op, &peer,
                        &result))
    return NULL;
  size_t es, count = 0;
  if (pydc_check_dtype(code, &es) < 0 || pydc_enter(grp) < 0)
    return NULL;
  pydc_leave(grp);
  pydc_request *q = PyObject_New(pydc_request, &pydc_request_type);
  if (!q)
    return NULL;
  q->r = NULL, q->has_in = q->has_out = 0, q->done = 0, q->err[0] = '\0';
  Py_INCREF(grp);
  q->group = (PyObject *)grp;
  Py_INCREF(result);
  q->result = result;
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
  dc_status st = issue(kind, q, grp->g, count, (dc_dtype)code, (dc_op)op,
                       peer);
  pydc_leave(grp);
  if (st != DC_OK) {
    pydc_raise(st, dc_group_last_error(grp->g));
    goto fail;
  }
  return (PyObject *)q;
fail:
  Py_DECREF(q);
  return NULL;
}

PyMethodDef pydc_request_methods[] = {
    {"start", py_start, METH_VARARGS,
     "start(group, kind, send, recv, dtype, op, peer, result) -> Request"},
    {NULL, NULL, 0, NULL},
};
