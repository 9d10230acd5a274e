/* Shared declarations of the distcomm._distcomm extension module.
 *
 * The C part is deliberately thin: it moves bytes between buffer-protocol
 * objects and the library, releases the GIL while the library waits, and
 * turns dc_status values into Python exceptions. Shapes, dtypes and numpy
 * results are handled by distcomm/__init__.py, where they are easy to read. */
#ifndef PYDC_H
#define PYDC_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "distcomm.h"

/* distcomm.Group: one reference to a dc_group, and its only wrapper (the
 * one-thread guard lives here). */
typedef struct {
  PyObject_HEAD dc_group *g;
  int busy; /* a call is in flight with the GIL released (see pydc_enter) */
  _Atomic int aborted; /* abort() was called: the interrupt poll says stop */
} pydc_group;

extern PyTypeObject pydc_group_type;

/* Wrap a group the caller owns (the wrapper takes the reference) and
 * install the Ctrl-C poll on it. */
PyObject *pydc_group_wrap(dc_group *g);
/* The same for a group from dc_init(): returns the world's existing wrapper
 * (dropping the extra reference) when there is one, so that every init()
 * result shares one object and one thread guard. */
PyObject *pydc_world_wrap(dc_group *g);

/* Claim a group for one call: fails with RuntimeError when another thread
 * is inside a call on it (the library allows one thread per group) or when
 * the group was already freed. */
int pydc_enter(pydc_group *self);
void pydc_leave(pydc_group *self);

/* Exceptions: create them on the module (errors.c). */
int pydc_errors_init(PyObject *module);
/* Raise the exception for st with the detail; returns NULL. When st is
 * DC_ERR_INTERRUPTED and a signal handler already raised (KeyboardInterrupt),
 * that exception is kept. */
PyObject *pydc_raise(dc_status st, const char *detail);

/* The interrupt poll installed on every group (Ctrl-C within ~100 ms). */
/* arg: the group's aborted flag, or NULL. */
int pydc_check_signals(void *arg);

/* Buffers (ops.c). A C-contiguous view of obj (writable when asked), or -1
 * with TypeError/ValueError naming what; release it with PyBuffer_Release. */
int pydc_get_buffer(PyObject *obj, Py_buffer *view, int writable,
                    const char *what);
/* ValueError unless code is a dc_dtype; else its element size. */
int pydc_check_dtype(int code, size_t *esize);
/* ValueError unless code is a dc_op (op codes come from Python callers and
 * must never reach the library unchecked). */
int pydc_check_op(int code);
/* The buffer's bytes as a whole number of elements, or ValueError. */
int pydc_count_of(const Py_buffer *v, size_t esize, size_t *count,
                  const char *what);

/* Objects with __dlpack__ (dlpack.c): true when obj has one; a new
 * buffer-protocol object over its memory (no copy), or NULL with TypeError
 * for a device or dtype distcomm cannot take (what names obj). */
int pydc_has_dlpack(PyObject *obj);
PyObject *pydc_dlpack_view(PyObject *obj, const char *what);

/* Module functions defined in ops.c, nn.c, dlpack.c, sync.c and request.c. */
extern PyMethodDef pydc_op_methods[];
extern PyMethodDef pydc_request_methods[];
extern PyTypeObject pydc_request_type;
extern PyMethodDef pydc_nn_methods[];
extern PyTypeObject pydc_average_type;
extern PyMethodDef pydc_dlpack_methods[];
extern PyMethodDef pydc_sync_methods[];

#endif /* PYDC_H */
