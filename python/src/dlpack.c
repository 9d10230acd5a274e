/* Objects with __dlpack__ (torch tensors, JAX and MLX arrays) as buffers.
 *
 * The producer's DLPack tensor is taken from its capsule and wrapped in a
 * small object with the buffer protocol (shape, strides, format), so every
 * op that takes a buffer takes these too, without a copy, and numpy can view
 * them (distcomm.dlpack_view). bfloat16, which the buffer protocol cannot
 * name, is shown as uint16 bit patterns, as in the rest of the Python API. */
#include <stdint.h>

#include "pydc.h"

/* The DLPack ABI (versions 0.x, what __dlpack__() returns when called
 * without max_version), laid out as its specification gives it. */
typedef struct {
  int32_t device_type;
  int32_t device_id;
} dl_device;

typedef struct {
  uint8_t code, bits;
  uint16_t lanes;
} dl_dtype;

typedef struct {
  void *data;
  dl_device device;
  int32_t ndim;
  dl_dtype dtype;
  int64_t *shape;
  int64_t *strides; /* in elements; NULL: row-major and compact */
  uint64_t byte_offset;
} dl_tensor;

typedef struct dl_managed {
  dl_tensor t;
  void *ctx;
  void (*deleter)(struct dl_managed *self);
} dl_managed;

enum { DL_INT, DL_UINT, DL_FLOAT, DL_HANDLE, DL_BFLOAT, DL_COMPLEX, DL_BOOL };
enum { DL_CPU = 1, DL_CUDA_HOST = 3, DL_CPU_SHARED = 13 };

/* Element types with a buffer-protocol format and a library dtype. */
static const struct {
  uint8_t code, bits;
  const char *format, *dtype;
} dl_types[] = {
    {DL_BOOL, 8, "?", "bool"},        {DL_INT, 8, "b", "int8"},
    {DL_INT, 16, "h", "int16"},       {DL_INT, 32, "i", "int32"},
    {DL_INT, 64, "q", "int64"},       {DL_UINT, 8, "B", "uint8"},
    {DL_UINT, 16, "H", "uint16"},     {DL_UINT, 32, "I", "uint32"},
    {DL_UINT, 64, "Q", "uint64"},     {DL_FLOAT, 16, "e", "float16"},
    {DL_FLOAT, 32, "f", "float32"},   {DL_FLOAT, 64, "d", "float64"},
    {DL_BFLOAT, 16, "H", "bfloat16"}, {DL_COMPLEX, 64, "Zf", "complex64"},
};

typedef struct {
  PyObject_HEAD dl_managed *m;
  char *data;
  Py_ssize_t len, itemsize, *shape, *strides; /* strides in bytes */
  int ndim, c_contiguous;
  const char *format, *dtype;
} dl_view;

static void view_dealloc(dl_view *self) {
  if (self->m && self->m->deleter)
    self->m->deleter(self->m);
  PyMem_Free(self->shape);
  PyObject_Free(self);
}

static int view_getbuffer(dl_view *self, Py_buffer *v, int flags) {
  int wants_layout = (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS ||
                     (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS ||
                     (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS ||
                     !(flags & PyBUF_STRIDES);
  int f_only = (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS &&
               (flags & PyBUF_ANY_CONTIGUOUS) != PyBUF_ANY_CONTIGUOUS;
  if ((wants_layout && !self->c_contiguous) || (f_only && self->ndim > 1)) {
    PyErr_SetString(PyExc_BufferError, "distcomm: the DLPack tensor is not "
                                       "C-contiguous");
    return -1;
  }
  *v = (Py_buffer){.buf = self->data,
                   .obj = Py_NewRef(self),
                   .len = self->len,
                   .itemsize = self->itemsize,
                   .ndim = self->ndim};
  v->format = flags & PyBUF_FORMAT ? (char *)self->format : NULL;
  v->shape = flags & PyBUF_ND ? self->shape : NULL;
  v->strides = flags & PyBUF_STRIDES ? self->strides : NULL;
  return 0;
}

static PyBufferProcs view_as_buffer = {
    .bf_getbuffer = (getbufferproc)view_getbuffer,
};

static PyObject *view_dtype(dl_view *self, void *unused) {
  (void)unused;
  return PyUnicode_FromString(self->dtype);
}

static PyGetSetDef view_getset[] = {
    {"dtype", (getter)view_dtype, NULL, "The library dtype name.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject dl_view_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "distcomm.DLPackView",
    .tp_basicsize = sizeof(dl_view),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A DLPack tensor seen through the buffer protocol.",
    .tp_dealloc = (destructor)view_dealloc,
    .tp_as_buffer = &view_as_buffer,
    .tp_getset = view_getset,
};

static int find_type(const dl_tensor *t, dl_view *v, const char *what) {
  for (size_t i = 0; i < sizeof dl_types / sizeof dl_types[0]; i++)
    if (dl_types[i].code == t->dtype.code &&
        dl_types[i].bits == t->dtype.bits && t->dtype.lanes == 1) {
      v->format = dl_types[i].format;
      v->dtype = dl_types[i].dtype;
      v->itemsize = dl_types[i].bits / 8;
      return 0;
    }
  PyErr_Format(PyExc_TypeError,
               "distcomm: %s has a DLPack dtype (code %u, %u bits, %u lanes) "
               "that distcomm does not support",
               what, t->dtype.code, t->dtype.bits, t->dtype.lanes);
  return -1;
}

/* Shape and byte strides from the DLPack tensor; notes C-contiguity. */
static int fill_layout(const dl_tensor *t, dl_view *v) {
  v->ndim = t->ndim;
  v->shape = PyMem_Calloc(2 * (size_t)t->ndim + 1, sizeof(Py_ssize_t));
  if (!v->shape) {
    PyErr_NoMemory();
    return -1;
  }
  v->strides = v->shape + t->ndim;
  Py_ssize_t numel = 1, expect = v->itemsize;
  int contiguous = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    v->shape[d] = (Py_ssize_t)t->shape[d];
    v->strides[d] =
        t->strides ? (Py_ssize_t)t->strides[d] * v->itemsize : expect;
    if (v->shape[d] != 1 && v->strides[d] != expect)
      contiguous = 0;
    expect *= v->shape[d];
    numel *= v->shape[d];
  }
  v->len = numel * v->itemsize;
  v->c_contiguous = contiguous || numel == 0;
  return 0;
}

static PyObject *view_new(dl_managed *m, const char *what) {
  dl_view *v = PyObject_New(dl_view, &dl_view_type);
  if (!v) {
    if (m->deleter)
      m->deleter(m);
    return NULL;
  }
  v->m = m;
  v->shape = NULL;
  v->data = (char *)m->t.data + m->t.byte_offset;
  int dev = m->t.device.device_type;
  if (dev != DL_CPU && dev != DL_CUDA_HOST && dev != DL_CPU_SHARED) {
    PyErr_Format(PyExc_TypeError,
                 "distcomm: %s is on DLPack device type %d (%s); distcomm "
                 "takes arrays in CPU memory only",
                 what, dev, dev == 2 ? "CUDA" : "not the CPU");
    Py_DECREF(v);
    return NULL;
  }
  if (find_type(&m->t, v, what) < 0 || fill_layout(&m->t, v) < 0) {
    Py_DECREF(v);
    return NULL;
  }
  return (PyObject *)v;
}

int pydc_has_dlpack(PyObject *obj) {
  return PyObject_HasAttrString(obj, "__dlpack__");
}

PyObject *pydc_dlpack_view(PyObject *obj, const char *what) {
  if (PyType_Ready(&dl_view_type) < 0)
    return NULL;
  PyObject *cap = PyObject_CallMethod(obj, "__dlpack__", NULL);
  if (!cap)
    return NULL;
  dl_managed *m = PyCapsule_GetPointer(cap, "dltensor");
  /* Renamed, the capsule is ours: its destructor leaves the tensor alone
   * and the view's deleter call frees it (the DLPack protocol). */
  if (!m || PyCapsule_SetName(cap, "used_dltensor") < 0) {
    Py_DECREF(cap);
    return NULL;
  }
  Py_DECREF(cap);
  return view_new(m, what);
}

/* dlpack_view(obj) -> a buffer-protocol object over obj's memory; its
 * .dtype is the library's name ("bfloat16" for uint16-formatted data). */
static PyObject *py_dlpack_view(PyObject *m, PyObject *obj) {
  (void)m;
  return pydc_dlpack_view(obj, "the array");
}

PyMethodDef pydc_dlpack_methods[] = {
    {"dlpack_view", py_dlpack_view, METH_O,
     "dlpack_view(obj): obj.__dlpack__() as a buffer; .dtype names its type."},
    {NULL, NULL, 0, NULL},
};
