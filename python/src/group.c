/* distcomm.Group: rank(), size(), split(color, key=-1), backend, as in MLX,
 * plus collectives() and set_timeout() from the C API. */
#include "pydc.h"

/* The wrapper of the world group while one is alive (borrowed). dc_init()
 * hands out the same dc_group each time, and the one-thread guard lives in
 * the wrapper, so the world must have exactly one wrapper. */
static pydc_group *world_wrapper;

PyObject *pydc_group_wrap(dc_group *g) {
  pydc_group *self = PyObject_New(pydc_group, &pydc_group_type);
  if (!self) {
    dc_group_free(g);
    return NULL;
  }
  self->g = g;
  self->busy = 0;
  self->aborted = 0;
  dc_group_set_interrupt(g, pydc_check_signals, (void *)&self->aborted);
  return (PyObject *)self;
}

PyObject *pydc_world_wrap(dc_group *g) {
  if (world_wrapper && world_wrapper->g == g) {
    dc_group_free(g); /* not the last reference: returns at once */
    Py_INCREF(world_wrapper);
    return (PyObject *)world_wrapper;
  }
  PyObject *w = pydc_group_wrap(g);
  if (w)
    world_wrapper = (pydc_group *)w;
  return w;
}

int pydc_enter(pydc_group *self) {
  if (!self->g) {
    PyErr_SetString(PyExc_ValueError, "distcomm: the group was freed");
    return -1;
  }
  if (self->busy) {
    PyErr_SetString(PyExc_RuntimeError,
                    "distcomm: this group is in use by another thread (a "
                    "group serves one thread at a time; split it to get one "
                    "per thread)");
    return -1;
  }
  self->busy = 1;
  return 0;
}

void pydc_leave(pydc_group *self) { self->busy = 0; }

/* Freeing may wait (bounded by the timeout) for peers: without the GIL. */
static void group_dealloc(pydc_group *self) {
  dc_group *g = self->g;
  self->g = NULL;
  if (self == world_wrapper) /* before the GIL goes: init() may run then */
    world_wrapper = NULL;
  if (g) {
    dc_group_set_interrupt(g, pydc_check_signals, NULL); /* self goes */
    Py_BEGIN_ALLOW_THREADS dc_group_free(g);
    Py_END_ALLOW_THREADS
  }
  PyObject_Free(self);
}

static PyObject *group_rank(pydc_group *self, PyObject *unused) {
  (void)unused;
  return PyLong_FromLong(self->g ? dc_group_rank(self->g) : -1);
}

static PyObject *group_size(pydc_group *self, PyObject *unused) {
  (void)unused;
  return PyLong_FromLong(self->g ? dc_group_size(self->g) : 0);
}

static PyObject *group_collectives(pydc_group *self, PyObject *unused) {
  (void)unused;
  return PyLong_FromUnsignedLongLong(dc_group_collectives(self->g));
}

static PyObject *group_split(pydc_group *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"color", "key", NULL};
  int color, key = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "i|i:split", names, &color, &key))
    return NULL;
  if (pydc_enter(self) < 0)
    return NULL;
  dc_group *sub = NULL;
  dc_status st;
  Py_BEGIN_ALLOW_THREADS st = dc_group_split(self->g, color, key, &sub);
  Py_END_ALLOW_THREADS pydc_leave(self);
  if (st != DC_OK)
    return pydc_raise(st, dc_group_last_error(self->g));
  if (!sub) /* color < 0: this rank takes no part, like MPI_UNDEFINED */
    Py_RETURN_NONE;
  return pydc_group_wrap(sub);
}

static PyObject *group_shrink(pydc_group *self, PyObject *unused) {
  (void)unused;
  if (pydc_enter(self) < 0)
    return NULL;
  dc_group *s = NULL;
  dc_status st;
  Py_BEGIN_ALLOW_THREADS st = dc_group_shrink(self->g, &s);
  Py_END_ALLOW_THREADS pydc_leave(self);
  if (st != DC_OK) /* the detail: dc_last_error (the group keeps its own) */
    return pydc_raise(st, dc_last_error());
  return pydc_group_wrap(s);
}

static PyObject *group_set_timeout(pydc_group *self, PyObject *arg) {
  double s = PyFloat_AsDouble(arg);
  if (s == -1.0 && PyErr_Occurred())
    return NULL;
  if (pydc_enter(self) < 0)
    return NULL;
  dc_status st = dc_group_set_timeout(self->g, s);
  pydc_leave(self);
  if (st != DC_OK)
    return pydc_raise(st, dc_group_last_error(self->g));
  Py_RETURN_NONE;
}

/* From any thread, without the group: the waits in progress and every
 * later one end within the poll interval, as after Ctrl-C (torch's
 * ProcessGroup.abort). */
static PyObject *group_abort(pydc_group *self, PyObject *unused) {
  (void)unused;
  self->aborted = 1;
  Py_RETURN_NONE;
}

static PyObject *group_backend(pydc_group *self, void *unused) {
  (void)unused;
  return PyUnicode_FromString(self->g ? dc_group_backend(self->g) : "freed");
}

static PyObject *group_repr(pydc_group *self) {
  if (!self->g)
    return PyUnicode_FromString("<distcomm.Group (freed)>");
  return PyUnicode_FromFormat("<distcomm.Group rank %d of %d (%s)>",
                              dc_group_rank(self->g), dc_group_size(self->g),
                              dc_group_backend(self->g));
}

static PyMethodDef group_methods[] = {
    {"rank", (PyCFunction)group_rank, METH_NOARGS, "This process's rank."},
    {"size", (PyCFunction)group_size, METH_NOARGS, "Number of ranks."},
    {"split", (PyCFunction)(void (*)(void))group_split,
     METH_VARARGS | METH_KEYWORDS,
     "split(color, key=-1) -> Group or None\n\nRanks with the same color form "
     "a new group ordered by key (key < 0 keeps this group's order). Every "
     "rank must call it. color < 0 takes no part and returns None."},
    {"shrink", (PyCFunction)group_shrink, METH_NOARGS,
     "shrink() -> Group\n\nThe ranks still alive after a lost one: every "
     "survivor calls it on the group it shared with the lost rank; the new "
     "group keeps the old order. This group stays failed "
     "(docs/reliability.md)."},
    {"collectives", (PyCFunction)group_collectives, METH_NOARGS,
     "Collectives issued on this group so far (send/recv not counted)."},
    {"set_timeout", (PyCFunction)group_set_timeout, METH_O,
     "set_timeout(seconds): how long a wait may see no progress."},
    {"abort", (PyCFunction)group_abort, METH_NOARGS,
     "abort(): waits in progress and later ones fail (the group is then "
     "unusable)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef group_getset[] = {
    {"backend", (getter)group_backend, NULL,
     "Backend name: 'ring', 'singleton'...", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject pydc_group_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "distcomm.Group",
    .tp_basicsize = sizeof(pydc_group),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A group of ranks (mx.distributed.Group). Get one from "
              "distcomm.init() or Group.split().",
    .tp_dealloc = (destructor)group_dealloc,
    .tp_repr = (reprfunc)group_repr,
    .tp_methods = group_methods,
    .tp_getset = group_getset,
};
