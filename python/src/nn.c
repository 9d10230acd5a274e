/* distcomm.nn's arithmetic: the library's dc_average_gradients and
 * dc_clip_grad_norm_sharded, in place on a list of writable buffers. The
 * Python layer only flattens trees and makes the copies it returns, so
 * Python and C callers get the same buckets and the same numbers. */
#include <limits.h>

#include "pydc.h"

/* The buffers of one call and the library's view of them. */
typedef struct {
  Py_ssize_t n, held; /* tensors, views acquired so far */
  Py_buffer *views;
  dc_tensor *t;
} tensor_list;

static void tensors_release(tensor_list *tl) {
  for (Py_ssize_t i = 0; i < tl->held; i++)
    PyBuffer_Release(&tl->views[i]);
  PyMem_Free(tl->views);
  PyMem_Free(tl->t);
}

static int tensor_at(PyObject *obj, PyObject *code_obj, Py_buffer *view,
                     dc_tensor *t) {
  long v = PyLong_AsLong(code_obj);
  if (v == -1 && PyErr_Occurred())
    return -1;
  size_t esize;
  if (pydc_check_dtype(v < 0 || v > INT_MAX ? -1 : (int)v, &esize) < 0)
    return -1;
  if (pydc_get_buffer(obj, view, 1, "a gradient") < 0)
    return -1;
  if (pydc_count_of(view, esize, &t->count, "a gradient") < 0) {
    PyBuffer_Release(view);
    return -1;
  }
  t->data = view->buf;
  t->dtype = (dc_dtype)v;
  return 0;
}

/* arrays and codes (lists this call owns, so nothing else changes them)
 * as views; on failure everything is released. */
static int tensors_view(PyObject *arrays, PyObject *codes, tensor_list *tl) {
  Py_ssize_t n = PyList_GET_SIZE(arrays);
  if (PyList_GET_SIZE(codes) != n) {
    PyErr_SetString(PyExc_ValueError,
                    "distcomm: arrays and codes must be lists of one length");
    return -1;
  }
  tl->n = n;
  tl->views = PyMem_Calloc((size_t)n + 1, sizeof *tl->views);
  tl->t = PyMem_Calloc((size_t)n + 1, sizeof *tl->t);
  if (!tl->views || !tl->t) {
    tensors_release(tl);
    PyErr_NoMemory();
    return -1;
  }
  for (; tl->held < n; tl->held++)
    if (tensor_at(PyList_GET_ITEM(arrays, tl->held),
                  PyList_GET_ITEM(codes, tl->held), &tl->views[tl->held],
                  &tl->t[tl->held]) < 0) {
      tensors_release(tl);
      return -1;
    }
  return 0;
}

/* arrays and codes: lists of the same length, writable C-contiguous buffers
 * and their dtype codes. Views of copies of the lists: an item's __dlpack__
 * or __index__ runs Python, which may change the caller's lists and free
 * their items. On failure everything is released. */
static int tensors_get(PyObject *arrays, PyObject *codes, tensor_list *tl) {
  *tl = (tensor_list){0};
  PyObject *a = PySequence_List(arrays), *c = a ? PySequence_List(codes) : NULL;
  int rc = c ? tensors_view(a, c, tl) : -1;
  Py_XDECREF(a);
  Py_XDECREF(c);
  return rc;
}

typedef struct {
  int clip;
  long long all_reduce_size;
  double max_norm, norm;
} nn_call;

/* Runs the helper on the group with the GIL released, under the group's
 * one-thread guard; 0 or -1 with the library's exception set. */
static int run_nn(pydc_group *grp, tensor_list *tl, nn_call *c) {
  if (pydc_enter(grp) < 0)
    return -1;
  dc_status st;
  Py_BEGIN_ALLOW_THREADS st =
      c->clip ? dc_clip_grad_norm_sharded(grp->g, tl->t, (size_t)tl->n,
                                          c->max_norm, &c->norm)
              : dc_average_gradients(grp->g, tl->t, (size_t)tl->n,
                                     c->all_reduce_size);
  Py_END_ALLOW_THREADS pydc_leave(grp);
  if (st != DC_OK) {
    pydc_raise(st, dc_group_last_error(grp->g));
    return -1;
  }
  return 0;
}

/* The arrays (and their dtype codes) as tensors, for the length of the call. */
static int run_lists(pydc_group *grp, PyObject *arrays, PyObject *codes,
                     nn_call *c) {
  tensor_list tl;
  if (tensors_get(arrays, codes, &tl) < 0)
    return -1;
  int rc = run_nn(grp, &tl, c);
  tensors_release(&tl);
  return rc;
}

static PyObject *py_average_gradients(PyObject *m, PyObject *args) {
  (void)m;
  pydc_group *grp;
  PyObject *arrays, *codes;
  nn_call c = {.clip = 0};
  if (!PyArg_ParseTuple(args, "O!O!O!L:average_gradients", &pydc_group_type,
                        &grp, &PyList_Type, &arrays, &PyList_Type, &codes,
                        &c.all_reduce_size))
    return NULL;
  if (run_lists(grp, arrays, codes, &c) < 0)
    return NULL;
  Py_RETURN_NONE;
}

static PyObject *py_clip_grad_norm_sharded(PyObject *m, PyObject *args) {
  (void)m;
  pydc_group *grp;
  PyObject *arrays, *codes;
  nn_call c = {.clip = 1};
  if (!PyArg_ParseTuple(args, "O!O!O!d:clip_grad_norm_sharded",
                        &pydc_group_type, &grp, &PyList_Type, &arrays,
                        &PyList_Type, &codes, &c.max_norm))
    return NULL;
  if (run_lists(grp, arrays, codes, &c) < 0)
    return NULL;
  return PyFloat_FromDouble(c.norm);
}

/* distcomm.GradientAverage: one overlapped dc_average_gradients. It holds
 * the buffer views (the arrays stay alive and unresized) and the group
 * until wait(); ready() only queues all_sums, so it keeps the GIL. */
typedef struct {
  PyObject_HEAD dc_grad_average *av;
  PyObject *group;
  tensor_list tl;
  int done;
} pydc_average;

/* Finish the call (GIL released): the buffers are the library's until
 * then. Returns the status; the views are released either way. */
static dc_status average_finish(pydc_average *self) {
  dc_grad_average *av = self->av;
  dc_status st;
  self->av = NULL;
  Py_BEGIN_ALLOW_THREADS st = dc_average_gradients_wait(av);
  Py_END_ALLOW_THREADS self->done = 1;
  tensors_release(&self->tl);
  self->tl = (tensor_list){0};
  return st;
}

static void average_dealloc(pydc_average *self) {
  if (self->av)
    average_finish(self);
  tensors_release(&self->tl); /* a start that failed */
  Py_XDECREF(self->group);
  PyObject_Free(self);
}

static PyObject *average_ready(pydc_average *self, PyObject *arg) {
  Py_ssize_t i = PyLong_AsSsize_t(arg);
  if (i == -1 && PyErr_Occurred())
    return NULL;
  if (self->done) {
    PyErr_SetString(PyExc_RuntimeError,
                    "distcomm: average_gradients: ready() after wait()");
    return NULL;
  }
  pydc_group *grp = (pydc_group *)self->group;
  if (i < 0 || i >= self->tl.n) {
    PyErr_Format(PyExc_IndexError,
                 "distcomm: average_gradients: ready(%zd): %zd gradients", i,
                 self->tl.n);
    return NULL;
  }
  if (pydc_enter(grp) < 0)
    return NULL;
  dc_status st = dc_average_gradients_ready(self->av, (size_t)i);
  pydc_leave(grp);
  if (st == DC_ERR_INVALID)
    return pydc_raise(st, dc_last_error());
  if (st != DC_OK)
    return pydc_raise(st, dc_group_last_error(grp->g));
  Py_RETURN_NONE;
}

static PyObject *average_wait(pydc_average *self, PyObject *unused) {
  (void)unused;
  if (self->done) {
    PyErr_SetString(PyExc_RuntimeError,
                    "distcomm: average_gradients: wait() called twice");
    return NULL;
  }
  pydc_group *grp = (pydc_group *)self->group;
  int claimed = grp->g != NULL; /* a freed group waited for us already */
  if (claimed && pydc_enter(grp) < 0)
    return NULL;
  dc_status st = average_finish(self);
  if (claimed)
    pydc_leave(grp);
  if (st != DC_OK)
    return pydc_raise(st, grp->g ? dc_group_last_error(grp->g) : "");
  if (PyErr_Occurred()) /* Ctrl-C as it completed */
    return NULL;
  Py_RETURN_NONE;
}

static PyMethodDef average_methods[] = {
    {"ready", (PyCFunction)average_ready, METH_O,
     "ready(i): gradient i is final; its bucket starts once complete."},
    {"wait", (PyCFunction)average_wait, METH_NOARGS,
     "Finish every bucket (GIL released) and divide, in place."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject pydc_average_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "distcomm.GradientAverage",
    .tp_basicsize = sizeof(pydc_average),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An overlapped average_gradients: ready(i), wait().",
    .tp_dealloc = (destructor)average_dealloc,
    .tp_methods = average_methods,
};

/* average_start(group, arrays, codes, all_reduce_size) -> GradientAverage
 * over the arrays themselves (in place). */
static PyObject *py_average_start(PyObject *m, PyObject *args) {
  (void)m;
  pydc_group *grp;
  PyObject *arrays, *codes;
  long long size;
  if (!PyArg_ParseTuple(args, "O!O!O!L:average_start", &pydc_group_type, &grp,
                        &PyList_Type, &arrays, &PyList_Type, &codes, &size))
    return NULL;
  pydc_average *self = PyObject_New(pydc_average, &pydc_average_type);
  if (!self)
    return NULL;
  self->av = NULL, self->done = 1, self->tl = (tensor_list){0};
  Py_INCREF(grp);
  self->group = (PyObject *)grp;
  if (tensors_get(arrays, codes, &self->tl) < 0) {
    Py_DECREF(self);
    return NULL;
  }
  if (pydc_enter(grp) < 0) {
    Py_DECREF(self);
    return NULL;
  }
  dc_status st = dc_average_gradients_start(
      grp->g, self->tl.t, (size_t)self->tl.n, size, &self->av);
  pydc_leave(grp);
  if (st != DC_OK) {
    pydc_raise(st, dc_group_last_error(grp->g));
    Py_DECREF(self);
    return NULL;
  }
  self->done = 0;
  return (PyObject *)self;
}

PyMethodDef pydc_nn_methods[] = {
    {"average_gradients", py_average_gradients, METH_VARARGS,
     "average_gradients(group, arrays, codes, all_reduce_size): "
     "dc_average_gradients in place on the buffers (codes: their dtypes)."},
    {"average_start", py_average_start, METH_VARARGS,
     "average_start(group, arrays, codes, all_reduce_size) -> "
     "GradientAverage: the overlapped dc_average_gradients, in place."},
    {"clip_grad_norm_sharded", py_clip_grad_norm_sharded, METH_VARARGS,
     "clip_grad_norm_sharded(group, arrays, codes, max_norm) -> norm: "
     "dc_clip_grad_norm_sharded in place on the buffers."},
    {NULL, NULL, 0, NULL},
};
