/* distcomm.Error and its subclasses, one per library status.
 *
 * The classes come from the header's DC_STATUS_MAP, so a new status gets its
 * exception without an edit here: ERR_PEER_LOST becomes PeerLostError, with
 * the library's text as its doc and .status = "ERR_PEER_LOST" on the class.
 * The table below only adds what Python wants on top: a better name where
 * the rule gives a poor one, and the builtin exception a Python user would
 * catch for the same trouble (ValueError for a bad argument, TimeoutError,
 * ConnectionError for a lost peer) as a second base, so generic handlers
 * keep working. */
#include <ctype.h>

#include "pydc.h"

typedef struct {
  dc_status status;
  const char *name; /* "ERR_PEER_LOST" */
  const char *text;
} status_row;

static const status_row statuses[] = {
#define PYDC_ROW_(name, value, text) {DC_##name, #name, text},
    DC_STATUS_MAP(PYDC_ROW_)
#undef PYDC_ROW_
};

#define NSTATUS (sizeof statuses / sizeof statuses[0])

typedef struct {
  dc_status status;
  const char *name;   /* class name, or NULL for the rule's */
  PyObject **builtin; /* second base class, or NULL */
} python_extra;

static const python_extra extras[] = {
    {DC_ERR_INVALID, "InvalidArgumentError", &PyExc_ValueError},
    {DC_ERR_NOMEM, "OutOfMemoryError", &PyExc_MemoryError},
    {DC_ERR_SYSTEM, "SystemCallError", &PyExc_OSError},
    {DC_ERR_TIMEOUT, NULL, &PyExc_TimeoutError},
    {DC_ERR_PEER_LOST, NULL, &PyExc_ConnectionError},
    {DC_ERR_NOT_SUPPORTED, NULL, &PyExc_NotImplementedError},
};

static PyObject *error_base;
static PyObject *types[NSTATUS]; /* by row of statuses; NULL for DC_OK */

static const python_extra *extra_for(dc_status st) {
  for (size_t i = 0; i < sizeof extras / sizeof extras[0]; i++)
    if (extras[i].status == st)
      return &extras[i];
  return NULL;
}

/* "ERR_PEER_LOST" -> "PeerLostError". */
static void class_name(const char *status, char *out, size_t cap) {
  if (strncmp(status, "ERR_", 4) == 0)
    status += 4;
  size_t n = 0;
  for (int up = 1; *status && n + 6 < cap; status++) {
    if (*status == '_') {
      up = 1;
      continue;
    }
    out[n++] = (char)(up ? toupper((unsigned char)*status)
                         : tolower((unsigned char)*status));
    up = 0;
  }
  snprintf(out + n, cap - n, "Error");
}

/* The class of one status row, with .status and the library's text; its
 * name (cap >= 64) is written to name. */
static PyObject *make_type(const status_row *row, char *name, size_t cap) {
  const python_extra *x = extra_for(row->status);
  char qualname[80], doc[256];
  if (x && x->name)
    snprintf(name, cap, "%s", x->name);
  else
    class_name(row->name, name, cap);
  snprintf(qualname, sizeof qualname, "distcomm.%s", name);
  snprintf(doc, sizeof doc, "The library's %s: %s.", row->name, row->text);
  PyObject *bases = x && x->builtin ? PyTuple_Pack(2, error_base, *x->builtin)
                                    : PyTuple_Pack(1, error_base);
  PyObject *dict = Py_BuildValue("{ss}", "status", row->name);
  PyObject *type = bases && dict
                       ? PyErr_NewExceptionWithDoc(qualname, doc, bases, dict)
                       : NULL;
  Py_XDECREF(bases);
  Py_XDECREF(dict);
  return type;
}

/* Each class goes on the module under its name and into ERRORS, a dict
 * {"ERR_PEER_LOST": PeerLostError, ...} the Python layer re-exports. */
static int add_types(PyObject *module) {
  PyObject *all = PyDict_New();
  if (!all)
    return -1;
  for (size_t i = 0; i < NSTATUS; i++) {
    if (statuses[i].status == DC_OK)
      continue;
    char name[64];
    types[i] = make_type(&statuses[i], name, sizeof name);
    if (!types[i] ||
        PyDict_SetItemString(all, statuses[i].name, types[i]) < 0 ||
        PyModule_AddObjectRef(module, name, types[i]) < 0) {
      Py_DECREF(all);
      return -1;
    }
  }
  return PyModule_AddObject(module, "ERRORS", all);
}

int pydc_errors_init(PyObject *module) {
  error_base = PyErr_NewExceptionWithDoc(
      "distcomm.Error",
      "Base of every distcomm failure; .status names the library status "
      "(e.g. 'ERR_PEER_LOST') and the message is the library's detail.",
      PyExc_RuntimeError, NULL);
  if (!error_base || PyModule_AddObjectRef(module, "Error", error_base) < 0)
    return -1;
  return add_types(module);
}

static PyObject *type_for(dc_status st) {
  for (size_t i = 0; i < NSTATUS; i++)
    if (statuses[i].status == st && types[i])
      return types[i];
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
  if (arg && *(_Atomic int *)arg) /* Group.abort(): no GIL needed */
    return 1;
  PyGILState_STATE s = PyGILState_Ensure();
  int stop = PyErr_CheckSignals() != 0;
  PyGILState_Release(s);
  return stop;
}
