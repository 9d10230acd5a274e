/* distcomm.Error and its subclasses, one per library status.
 *
 * Each subclass also derives from the builtin exception a Python user would
 * catch for the same trouble (ValueError for a bad argument, TimeoutError,
 * ConnectionError for a lost peer), so generic handlers keep working. */
#include "pydc.h"

typedef struct {
  dc_status status;
  const char *name; /* attribute of the module and class name */
  const char *doc;
  PyObject **builtin; /* second base class, or NULL */
  PyObject *type;     /* created by pydc_errors_init */
} error_kind;

static PyObject *error_base;

static error_kind kinds[] = {
    {DC_ERR_INVALID, "InvalidArgumentError", "An argument the library refused.",
     &PyExc_ValueError, NULL},
    {DC_ERR_NOMEM, "OutOfMemoryError", "The library ran out of memory.",
     &PyExc_MemoryError, NULL},
    {DC_ERR_SYSTEM, "SystemCallError", "A system call failed.", &PyExc_OSError,
     NULL},
    {DC_ERR_TIMEOUT, "TimeoutError",
     "A peer made no progress for the group's timeout.", &PyExc_TimeoutError,
     NULL},
    {DC_ERR_PEER_LOST, "PeerLostError",
     "A peer exited or closed its connection.", &PyExc_ConnectionError, NULL},
    {DC_ERR_MISMATCH, "MismatchError",
     "Ranks disagree on the op, count, dtype or root of a call.", NULL, NULL},
    {DC_ERR_NOT_SUPPORTED, "NotSupportedError",
     "The operation is not supported (e.g. max of complex64).",
     &PyExc_NotImplementedError, NULL},
    {DC_ERR_UNAVAILABLE, "UnavailableError",
     "The backend is not built or not configured.", NULL, NULL},
    {DC_ERR_CONFIG, "ConfigError", "Bad hostfile or environment.", NULL, NULL},
    {DC_ERR_AUTH, "AuthError", "A peer failed authentication.", NULL, NULL},
    {DC_ERR_ABORTED, "AbortedError", "The group was already torn down.", NULL,
     NULL},
    {DC_ERR_INTERRUPTED, "InterruptedError",
     "A wait was abandoned because of a signal (the group is now unusable).",
     NULL, NULL},
};

#define NKINDS (sizeof kinds / sizeof kinds[0])

static int add_kind(PyObject *module, error_kind *k) {
  char qualname[64];
  snprintf(qualname, sizeof qualname, "distcomm.%s", k->name);
  PyObject *bases = k->builtin ? PyTuple_Pack(2, error_base, *k->builtin)
                               : PyTuple_Pack(1, error_base);
  if (!bases)
    return -1;
  k->type = PyErr_NewExceptionWithDoc(qualname, k->doc, bases, NULL);
  Py_DECREF(bases);
  if (!k->type)
    return -1;
  Py_INCREF(k->type); /* one for the table, one given to the module */
  return PyModule_AddObject(module, k->name, k->type);
}

int pydc_errors_init(PyObject *module) {
  error_base = PyErr_NewExceptionWithDoc(
      "distcomm.Error",
      "Base of every distcomm failure; .status names the library status "
      "(e.g. 'ERR_PEER_LOST') and the message is the library's detail.",
      PyExc_RuntimeError, NULL);
  if (!error_base)
    return -1;
  Py_INCREF(error_base);
  if (PyModule_AddObject(module, "Error", error_base) < 0)
    return -1;
  for (size_t i = 0; i < NKINDS; i++)
    if (add_kind(module, &kinds[i]) < 0)
      return -1;
  return 0;
}

static PyObject *type_for(dc_status st) {
  for (size_t i = 0; i < NKINDS; i++)
    if (kinds[i].status == st)
      return kinds[i].type;
  return error_base;
}

/* Builds the instance by hand so that it carries .status as well. */
PyObject *pydc_raise(dc_status st, const char *detail) {
  if (st == DC_ERR_INTERRUPTED && PyErr_Occurred())
    return NULL;
  const char *msg = detail && *detail ? detail : dc_strerror(st);
  PyObject *type = type_for(st);
  PyObject *exc = PyObject_CallFunction(type, "s", msg);
  if (!exc)
    return NULL;
  PyObject *name = PyUnicode_FromString(dc_status_name(st));
  if (!name || PyObject_SetAttrString(exc, "status", name) < 0) {
    Py_XDECREF(name);
    Py_DECREF(exc);
    return NULL;
  }
  Py_DECREF(name);
  PyErr_SetObject(type, exc);
  Py_DECREF(exc);
  return NULL;
}

/* Runs on the thread that waits inside the library, with the GIL released
 * by the caller: take it, let Python run its signal handlers (SIGINT raises
 * KeyboardInterrupt there), and ask the library to give up if one raised. */
int pydc_check_signals(void *arg) {
  (void)arg;
  PyGILState_STATE s = PyGILState_Ensure();
  int stop = PyErr_CheckSignals() != 0;
  PyGILState_Release(s);
  return stop;
}
