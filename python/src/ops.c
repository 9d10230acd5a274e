/* The collectives on raw buffers: _distcomm.all_reduce(group, send, recv,
 * dtype, op) and friends. Sizes are checked here in bytes, so that whatever
 * the Python layer passes, the library never writes past a buffer. */
#include "pydc.h"

enum call_kind { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, SEND, RECV };

/* Everything one library call needs, so it can run without the GIL. */
typedef struct {
  enum call_kind kind;
  dc_group *g;
  const void *send;
  void *recv;
  size_t count;
  dc_dtype dtype;
  dc_op op;
  int peer;
} call;

static dc_status run_call(const call *c) {
  switch (c->kind) {
  case ALL_REDUCE:
    return dc_all_reduce(c->g, c->send, c->recv, c->count, c->dtype, c->op);
  case ALL_GATHER:
    return dc_all_gather(c->g, c->send, c->recv, c->count, c->dtype);
  case REDUCE_SCATTER:
    return dc_reduce_scatter(c->g, c->send, c->recv, c->count, c->dtype, c->op);
  case SEND:
    return dc_send(c->g, c->send, c->count, c->dtype, c->peer);
  case RECV:
    return dc_recv(c->g, c->recv, c->count, c->dtype, c->peer);
  }
  return DC_ERR_INVALID;
}

/* Runs c on the group with the GIL released; a Python result or NULL. */
static PyObject *dispatch(pydc_group *grp, call *c) {
  if (pydc_enter(grp) < 0)
    return NULL;
  c->g = grp->g;
  dc_status st;
  Py_BEGIN_ALLOW_THREADS st = run_call(c);
  Py_END_ALLOW_THREADS pydc_leave(grp);
  if (st != DC_OK)
    return pydc_raise(st, dc_group_last_error(grp->g));
  Py_RETURN_NONE;
}

int pydc_get_buffer(PyObject *obj, Py_buffer *view, int writable,
                    const char *what) {
  if (!PyObject_CheckBuffer(obj) && pydc_has_dlpack(obj)) {
    PyObject *dl = pydc_dlpack_view(obj, what); /* torch tensors, ... */
    if (!dl)
      return -1;
    int r = pydc_get_buffer(dl, view, writable, what);
    Py_DECREF(dl);
    return r;
  }
  if (!PyObject_CheckBuffer(obj)) {
    PyErr_Format(
        PyExc_TypeError,
        "distcomm: %s must support the buffer protocol or DLPack, not %.100s",
        what, Py_TYPE(obj)->tp_name);
    return -1;
  }
  int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj, view, flags) == 0)
    return 0;
  PyErr_Clear();
  PyErr_Format(PyExc_ValueError, "distcomm: %s must be a C-contiguous%s buffer",
               what, writable ? ", writable" : "");
  return -1;
}

int pydc_check_dtype(int code, size_t *esize) {
  if (code < 0 || code >= DC_DTYPE_COUNT) {
    PyErr_Format(PyExc_ValueError, "distcomm: dtype code %d is not valid",
                 code);
    return -1;
  }
  *esize = dc_dtype_size((dc_dtype)code);
  return 0;
}

int pydc_check_op(int code) {
  if (code < 0 || code >= DC_OP_COUNT) {
    PyErr_Format(PyExc_ValueError, "distcomm: op code %d is not valid", code);
    return -1;
  }
  return 0;
}

int pydc_count_of(const Py_buffer *v, size_t esize, size_t *count,
                  const char *what) {
  if ((size_t)v->len % esize) {
    PyErr_Format(PyExc_ValueError,
                 "distcomm: %s holds %zd bytes, not a whole number of "
                 "%zu-byte elements",
                 what, v->len, esize);
    return -1;
  }
  *count = (size_t)v->len / esize;
  return 0;
}

/* send and recv lengths in bytes must satisfy send * smul == recv * rmul. */
static int check_ratio(const Py_buffer *in, const Py_buffer *out, size_t smul,
                       size_t rmul, const char *op) {
  if ((size_t)in->len * smul == (size_t)out->len * rmul)
    return 0;
  PyErr_Format(PyExc_ValueError,
               "distcomm: %s: the output buffer holds %zd bytes, expected %zu",
               op, out->len, (size_t)in->len * smul / rmul);
  return -1;
}

/* The three collectives with an input and an output buffer. */
static PyObject *two_buffer_op(PyObject *args, enum call_kind kind,
                               const char *fmt) {
  pydc_group *grp;
  PyObject *send_obj, *recv_obj;
  int code, op = DC_SUM;
  if (!PyArg_ParseTuple(args, fmt, &pydc_group_type, &grp, &send_obj, &recv_obj,
                        &code, &op))
    return NULL;
  size_t esize, count;
  if (pydc_check_dtype(code, &esize) < 0 ||
      (kind != ALL_GATHER && pydc_check_op(op) < 0) || pydc_enter(grp) < 0)
    return NULL;
  size_t n = (size_t)dc_group_size(grp->g);
  pydc_leave(grp);
  Py_buffer in, out;
  if (pydc_get_buffer(send_obj, &in, 0, "the input") < 0)
    return NULL;
  if (pydc_get_buffer(recv_obj, &out, 1, "the output") < 0) {
    PyBuffer_Release(&in);
    return NULL;
  }
  PyObject *res = NULL;
  size_t smul = kind == ALL_GATHER ? n : 1,
         rmul = kind == REDUCE_SCATTER ? n : 1;
  const char *name = kind == ALL_GATHER       ? "all_gather"
                     : kind == REDUCE_SCATTER ? "sum_scatter"
                                              : "all_reduce";
  if (check_ratio(&in, &out, smul, rmul, name) == 0 &&
      pydc_count_of(kind == REDUCE_SCATTER ? &out : &in, esize, &count,
                    "the input") == 0) {
    call c = {.kind = kind,
              .send = in.buf,
              .recv = out.buf,
              .count = count,
              .dtype = (dc_dtype)code,
              .op = (dc_op)op};
    res = dispatch(grp, &c);
  }
  PyBuffer_Release(&out);
  PyBuffer_Release(&in);
  return res;
}

static PyObject *py_all_reduce(PyObject *m, PyObject *args) {
  (void)m;
  return two_buffer_op(args, ALL_REDUCE, "O!OOii:all_reduce");
}

static PyObject *py_all_gather(PyObject *m, PyObject *args) {
  (void)m;
  return two_buffer_op(args, ALL_GATHER, "O!OOi:all_gather");
}

static PyObject *py_reduce_scatter(PyObject *m, PyObject *args) {
  (void)m;
  return two_buffer_op(args, REDUCE_SCATTER, "O!OOi|i:reduce_scatter");
}

/* send(group, buf, dtype, dst) and recv(group, buf, dtype, src). */
static PyObject *point_to_point(PyObject *args, enum call_kind kind,
                                const char *fmt) {
  pydc_group *grp;
  PyObject *obj;
  int code, peer;
  if (!PyArg_ParseTuple(args, fmt, &pydc_group_type, &grp, &obj, &code, &peer))
    return NULL;
  size_t esize, count;
  if (pydc_check_dtype(code, &esize) < 0)
    return NULL;
  Py_buffer v;
  if (pydc_get_buffer(obj, &v, kind == RECV,
                      kind == RECV ? "the output" : "the input") < 0)
    return NULL;
  PyObject *res = NULL;
  if (pydc_count_of(&v, esize, &count, "the buffer") == 0) {
    call c = {.kind = kind,
              .send = v.buf,
              .recv = v.buf,
              .count = count,
              .dtype = (dc_dtype)code,
              .peer = peer};
    res = dispatch(grp, &c);
  }
  PyBuffer_Release(&v);
  return res;
}

static PyObject *py_send(PyObject *m, PyObject *args) {
  (void)m;
  return point_to_point(args, SEND, "O!Oii:send");
}

static PyObject *py_recv(PyObject *m, PyObject *args) {
  (void)m;
  return point_to_point(args, RECV, "O!Oii:recv");
}

PyMethodDef pydc_op_methods[] = {
    {"all_reduce", py_all_reduce, METH_VARARGS,
     "all_reduce(group, send, recv, dtype, op): recv = op over ranks of send."},
    {"all_gather", py_all_gather, METH_VARARGS,
     "all_gather(group, send, recv, dtype): recv holds size x send, "
     "rank-major."},
    {"reduce_scatter", py_reduce_scatter, METH_VARARGS,
     "reduce_scatter(group, send, recv, dtype, op=SUM): send holds size x "
     "recv."},
    {"send", py_send, METH_VARARGS, "send(group, buf, dtype, dst)"},
    {"recv", py_recv, METH_VARARGS, "recv(group, buf, dtype, src)"},
    {NULL, NULL, 0, NULL},
};
