/* _distcomm.broadcast(group, buf, dtype, root) and _distcomm.barrier(group):
 * the two library collectives that MLX's Python API lacks and that
 * torch.distributed needs (distcomm.torch). */
#include "pydc.h"

typedef struct {
  dc_group *g;
  void *buf;
  size_t count;
  dc_dtype dtype;
  int root, barrier;
} sync_call;

/* Runs c with the GIL released; None or the library's exception. */
static PyObject *run_sync(pydc_group *grp, sync_call *c) {
  if (pydc_enter(grp) < 0)
    return NULL;
  c->g = grp->g;
  dc_status st;
  Py_BEGIN_ALLOW_THREADS st =
      c->barrier ? dc_barrier(c->g)
                 : dc_broadcast(c->g, c->buf, c->count, c->dtype, c->root);
  Py_END_ALLOW_THREADS pydc_leave(grp);
  if (st != DC_OK)
    return pydc_raise(st, dc_group_last_error(grp->g));
  Py_RETURN_NONE;
}

static PyObject *py_broadcast(PyObject *m, PyObject *args) {
  (void)m;
  pydc_group *grp;
  PyObject *obj;
  int code, root;
  if (!PyArg_ParseTuple(args, "O!Oii:broadcast", &pydc_group_type, &grp, &obj,
                        &code, &root))
    return NULL;
  size_t esize, count;
  if (pydc_check_dtype(code, &esize) < 0)
    return NULL;
  Py_buffer v;
  if (pydc_get_buffer(obj, &v, 1, "the buffer") < 0)
    return NULL;
  PyObject *res = NULL;
  if (pydc_count_of(&v, esize, &count, "the buffer") == 0) {
    sync_call c = {
        .buf = v.buf, .count = count, .dtype = (dc_dtype)code, .root = root};
    res = run_sync(grp, &c);
  }
  PyBuffer_Release(&v);
  return res;
}

static PyObject *py_barrier(PyObject *m, PyObject *args) {
  (void)m;
  pydc_group *grp;
  if (!PyArg_ParseTuple(args, "O!:barrier", &pydc_group_type, &grp))
    return NULL;
  sync_call c = {.barrier = 1};
  return run_sync(grp, &c);
}

PyMethodDef pydc_sync_methods[] = {
    {"broadcast", py_broadcast, METH_VARARGS,
     "broadcast(group, buf, dtype, root): buf on root is copied to every "
     "rank."},
    {"barrier", py_barrier, METH_VARARGS,
     "barrier(group): returns once every rank has entered it."},
    {NULL, NULL, 0, NULL},
};
