/* distcomm._distcomm: init(), the Group type, the exceptions, the buffer
 * collectives (ops.c) and the tables the Python layer maps numpy onto. */
#include "pydc.h"

static PyObject *py_init(PyObject *m, PyObject *args, PyObject *kw) {
  (void)m;
  static char *names[] = {"strict", "backend", NULL};
  int strict = 0;
  const char *backend = "any";
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|ps:init", names, &strict,
                                   &backend))
    return NULL;
  dc_group *g = NULL;
  dc_status st;
  /* Connecting may wait for the other ranks to start. */
  Py_BEGIN_ALLOW_THREADS st = dc_init(backend, strict, &g);
  Py_END_ALLOW_THREADS if (st != DC_OK) return pydc_raise(st, dc_last_error());
  return pydc_world_wrap(g);
}

static PyMethodDef module_methods[] = {
    {"init", (PyCFunction)(void (*)(void))py_init, METH_VARARGS | METH_KEYWORDS,
     "init(strict=False, backend='any') -> Group"},
    {NULL, NULL, 0, NULL},
};

/* {"float32": (code, itemsize), ...} for every library dtype. */
static PyObject *dtype_table(void) {
  PyObject *d = PyDict_New();
  for (int i = 0; d && i < DC_DTYPE_COUNT; i++) {
    PyObject *v =
        Py_BuildValue("(in)", i, (Py_ssize_t)dc_dtype_size((dc_dtype)i));
    if (!v || PyDict_SetItemString(d, dc_dtype_name((dc_dtype)i), v) < 0)
      Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}

static PyObject *op_table(void) {
  PyObject *d = PyDict_New();
  for (int i = 0; d && i < DC_OP_COUNT; i++) {
    PyObject *v = PyLong_FromLong(i);
    if (!v || PyDict_SetItemString(d, dc_op_name((dc_op)i), v) < 0)
      Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}

static int add_tables(PyObject *module) {
  if (PyModule_AddObject(module, "DTYPES", dtype_table()) < 0 ||
      PyModule_AddObject(module, "OPS", op_table()) < 0 ||
      PyModule_AddStringConstant(module, "version", dc_version()) < 0)
    return -1;
  Py_INCREF(&pydc_group_type);
  if (PyModule_AddObject(module, "Group", (PyObject *)&pydc_group_type) < 0)
    return -1;
  Py_INCREF(&pydc_average_type);
  if (PyModule_AddObject(module, "GradientAverage",
                         (PyObject *)&pydc_average_type) < 0)
    return -1;
  Py_INCREF(&pydc_request_type);
  return PyModule_AddObject(module, "Request", (PyObject *)&pydc_request_type);
}

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "distcomm._distcomm",
    .m_doc =
        "Low-level buffer collectives of distcomm; use the distcomm package.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__distcomm(void) {
  if (PyType_Ready(&pydc_group_type) < 0 ||
      PyType_Ready(&pydc_request_type) < 0 ||
      PyType_Ready(&pydc_average_type) < 0)
    return NULL;
  PyObject *module = PyModule_Create(&module_def);
  if (!module)
    return NULL;
  if (PyModule_AddFunctions(module, pydc_op_methods) < 0 ||
      PyModule_AddFunctions(module, pydc_nn_methods) < 0 ||
      PyModule_AddFunctions(module, pydc_dlpack_methods) < 0 ||
      PyModule_AddFunctions(module, pydc_sync_methods) < 0 ||
      PyModule_AddFunctions(module, pydc_request_methods) < 0 ||
      pydc_errors_init(module) < 0 || add_tables(module) < 0) {
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
