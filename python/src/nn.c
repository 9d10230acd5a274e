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

/* arrays and codes: lists of the same length, writable C-contiguous buffers
 * and their dtype codes. On failure everything is released. */
static int tensors_get(PyObject *arrays, PyObject *codes, tensor_list *tl) {
  *tl = (tensor_list){0};
  Py_ssize_t n = PyList_Size(arrays);
  if (n < 0 || PyList_Size(codes) != n) {
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
  Py_BEGIN_ALLOW_THREADS
  st = c->clip ? dc_clip_grad_norm_sharded(grp->g, tl->t, (size_t)tl->n,
                                           c->max_norm, &c->norm)
               : dc_average_gradients(grp->g, tl->t, (size_t)tl->n,
                                      c->all_reduce_size);
  Py_END_ALLOW_THREADS
  pydc_leave(grp);
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

PyMethodDef pydc_nn_methods[] = {
    {"average_gradients", py_average_gradients, METH_VARARGS,
     "average_gradients(group, arrays, codes, all_reduce_size): "
     "dc_average_gradients in place on the buffers (codes: their dtypes)."},
    {"clip_grad_norm_sharded", py_clip_grad_norm_sharded, METH_VARARGS,
     "clip_grad_norm_sharded(group, arrays, codes, max_norm) -> norm: "
     "dc_clip_grad_norm_sharded in place on the buffers."},
    {NULL, NULL, 0, NULL},
};
