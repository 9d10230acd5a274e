"""distcomm: MLX's ``mx.distributed`` for numpy arrays.

    import numpy as np
    import distcomm

    world = distcomm.init()
    x = distcomm.all_sum(np.ones(10, dtype=np.float32))
    print(world.rank(), x)

Every collective takes any object with the buffer protocol or
``__dlpack__`` (numpy arrays, torch tensors, JAX and MLX arrays: their memory
is read in place; others go through ``numpy.asarray``), copies it when it is not
C-contiguous, and returns a new numpy array of the same dtype with the shape
MLX gives; for an ``mx.array`` input (or an ``mx.Dtype`` given to recv or
scatter) the result is an ``mx.array``, bfloat16 included (mlx is imported
only by the caller). ``out=`` writes the result into an existing numpy array
instead (never into an ``mx.array``: MLX arrays are immutable).
``group=None`` means the world group, ``init()``. bfloat16, which numpy
lacks, travels as uint16 bit patterns with ``dtype="bfloat16"``.

Library failures raise ``distcomm.Error`` subclasses whose message is the
library's detail (the op, the peer and its address). The GIL is released
while a call waits, and Ctrl-C interrupts a wait within a fraction of a
second (the group is then unusable, as after any communication failure).
"""

import os as _os
import sys as _sys

import numpy as _np

from . import _distcomm as _c
from ._distcomm import Error, Group  # noqa: F401  (re-exported)
from ._distcomm import Request  # noqa: F401  (re-exported)

# One exception class per library status, made by the C module from the
# header's status list: distcomm.PeerLostError, distcomm.TimeoutError, ...
ERRORS = dict(_c.ERRORS)
globals().update((cls.__name__, cls) for cls in ERRORS.values())

__version__ = _c.version
__all__ = [
    "init", "is_available", "Group", "all_sum", "all_max", "all_min",
    "all_gather", "sum_scatter", "send", "recv", "recv_like", "Error",
    "all_to_all", "gather", "scatter", "reduce", "Request", "broadcast",
    "barrier",
] + sorted(cls.__name__ for cls in ERRORS.values())

# numpy (kind, itemsize) -> library dtype name. Keyed this way because
# several numpy dtype objects spell the same type ('l' and 'q' on Linux).
_KINDS = {
    ("b", 1): "bool",
    ("i", 1): "int8", ("i", 2): "int16", ("i", 4): "int32", ("i", 8): "int64",
    ("u", 1): "uint8", ("u", 2): "uint16", ("u", 4): "uint32", ("u", 8): "uint64",
    ("f", 2): "float16", ("f", 4): "float32", ("f", 8): "float64",
    ("c", 8): "complex64",
}
_SUPPORTED = "bool, int8-int64, uint8-uint64, float16, float32, float64, complex64"

_world = None


def init(strict=False, backend="any"):
    """Initialise (once) and return the world group, like ``mx.distributed.init``.

    With nothing configured, a non-strict init returns a group of one; a
    strict one raises ``UnavailableError`` naming the missing variables.
    """
    global _world
    group = _c.init(strict=bool(strict), backend=backend)
    # The library read the job token and removed it from the C environment;
    # os.environ is Python's own copy, and os.environ.copy() handed to a
    # child would pass the token on (audit item 14).
    _os.environ.pop("DISTCOMM_JOB_TOKEN", None)
    if _world is None:
        _world = group
    return group


def is_available(backend="any"):
    """True when a backend is built in (the TCP ring always is)."""
    return backend in ("any", "ring")


def _group(group):
    if group is None:
        return _world if _world is not None else init()
    if not isinstance(group, Group):
        raise TypeError(f"distcomm: group must be a distcomm.Group, not {type(group).__name__}")
    return group


def _code(dtype):
    """Library dtype code of a numpy dtype (native byte order)."""
    name = _KINDS.get((dtype.kind, dtype.itemsize))
    if name is None or not dtype.isnative:
        raise TypeError(f"distcomm: dtype {dtype} is not supported (supported: "
                        f"{_SUPPORTED}, and bfloat16 as uint16 with dtype='bfloat16')")
    return _c.DTYPES[name][0]


def _asarray(x):
    """x as a numpy array over its memory, and "bfloat16" when its DLPack
    dtype says so (numpy sees such data as uint16)."""
    if isinstance(x, _np.ndarray) or not hasattr(x, "__dlpack__"):
        return _np.asarray(x), None
    try:
        v = _c.dlpack_view(x)  # torch tensors, JAX and MLX arrays: no copy
    except RuntimeError:       # the producer cannot export it (torch 1.13: bool)
        return _np.asarray(x), None
    return _np.asarray(v), (v.dtype if v.dtype == "bfloat16" else None)


def _mx_of(x):
    """mlx.core when x is an mx.array or an mx.Dtype, else None. The module
    is looked up, never imported: an mx object means the caller imported it."""
    t = type(x)
    if t.__module__ == "mlx.core" and t.__name__ in ("array", "Dtype"):
        return _sys.modules["mlx.core"]
    return None


def _mx_dtype(dtype):
    """The library dtype name of an mx.Dtype (mlx.core.bfloat16 -> "bfloat16")."""
    name = str(dtype).rsplit(".", 1)[-1]
    return "bool" if name == "bool_" else name


def _like(x, code):
    """What _result needs to give x's kind of array back: None for numpy,
    else (mlx.core, whether the numpy result holds bfloat16 bits)."""
    mx = _mx_of(x)
    return None if mx is None else (mx, code == _c.DTYPES["bfloat16"][0])


def _result(res, like):
    """res (a numpy array, or None) as the caller's kind of array. mx.array
    copies res once: MLX arrays own their memory and are immutable, so the
    library cannot write into one."""
    if like is None or res is None:
        return res
    mx, bf16 = like
    # dtype named: mx.array(float64 numpy) alone would give float32
    kind = "bool_" if res.dtype.kind == "b" else res.dtype.name
    arr = mx.array(res, dtype=getattr(mx, kind))
    return mx.view(arr, mx.bfloat16) if bf16 else arr


def _converter(like):
    """The Request's convert callable (None: wait() returns the numpy array)."""
    return None if like is None else (lambda res: _result(res, like))


def _input(x, dtype=None):
    """x as a C-contiguous numpy array and the library dtype code.

    Checks happen here, before anything is sent, so a bad dtype raises on
    the rank that passed it without disturbing the group.
    """
    a, dl = _asarray(x)
    dtype = dl if dtype is None else dtype
    if _mx_of(dtype) is not None:
        dtype = _mx_dtype(dtype)
    if dtype is not None and str(dtype) == "bfloat16":
        if a.dtype.kind not in "uiV" or a.dtype.itemsize != 2:
            raise TypeError(f"distcomm: bfloat16 data must be stored as uint16, not {a.dtype}")
        code = _c.DTYPES["bfloat16"][0]
    else:
        if dtype is not None and _np.dtype(dtype) != a.dtype:
            raise TypeError(f"distcomm: dtype={dtype} but the array is {a.dtype}")
        if a.dtype.kind in "iufc" and not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        code = _code(a.dtype)
    # (not ascontiguousarray: it turns a 0-d array into shape (1,))
    return (a if a.flags.c_contiguous else a.copy(order="C")), code


def _output(out, shape, dtype, op):
    """A new array, or out after checking it can take the result in place."""
    if out is None:
        return _np.empty(shape, dtype)
    if _mx_of(out) is not None:
        raise TypeError(f"distcomm: {op}: out cannot be an mx.array (MLX arrays are "
                        "immutable); use the returned array")
    if not isinstance(out, _np.ndarray) and hasattr(out, "__dlpack__"):
        out = _asarray(out)[0]  # writes land in the caller's tensor
    if not isinstance(out, _np.ndarray):
        raise TypeError(f"distcomm: {op}: out must be a numpy array or have __dlpack__")
    if out.dtype != dtype or out.shape != tuple(shape):
        raise ValueError(f"distcomm: {op}: out is {out.dtype}{list(out.shape)}, "
                         f"the result is {_np.dtype(dtype)}{list(shape)}")
    if not (out.flags.c_contiguous and out.flags.writeable):
        raise ValueError(f"distcomm: {op}: out must be C-contiguous and writable")
    return out


def _start(g, kind, send, recv, code, op=0, peer=0, result=None, like=None):
    """A Request for the op (async_op=True): the library's dc_i* call.

    The request keeps the arrays until it completes; its wait() returns
    result. Requests on a group run in issue order, and a blocking op on the
    group waits for them first, so every rank must issue the same ops in
    the same order, blocking or not.
    """
    return _c.start(g, kind, send, recv, code, op, peer, result, _converter(like))


def _reduce(x, op, group, out, dtype, async_op=False):
    a, code = _input(x, dtype)
    g = _group(group)
    res = _output(out, a.shape, a.dtype, "all_" + op)
    like = _like(x, code) if out is None else None
    if async_op:
        return _start(g, "all_reduce", a, res, code, _c.OPS[op], 0, res, like)
    _c.all_reduce(g, a, res, code, _c.OPS[op])
    return _result(res, like)


def all_sum(x, *, group=None, out=None, dtype=None, async_op=False):
    """Sum of x over the ranks of the group; every rank gets the same result.

    async_op=True returns a Request at once; its wait() returns the result.
    """
    return _reduce(x, "sum", group, out, dtype, async_op)


def all_max(x, *, group=None, out=None, dtype=None, async_op=False):
    """Element-wise maximum over the ranks (not for complex64)."""
    return _reduce(x, "max", group, out, dtype, async_op)


def all_min(x, *, group=None, out=None, dtype=None, async_op=False):
    """Element-wise minimum over the ranks (not for complex64)."""
    return _reduce(x, "min", group, out, dtype, async_op)


def all_gather(x, *, group=None, out=None, dtype=None, async_op=False):
    """Every rank's x concatenated on axis 0 in rank order; a scalar gives [size]."""
    a, code = _input(x, dtype)
    g = _group(group)
    shape = (g.size(),) if a.ndim == 0 else (g.size() * a.shape[0],) + a.shape[1:]
    res = _output(out, shape, a.dtype, "all_gather")
    like = _like(x, code) if out is None else None
    if async_op:
        return _start(g, "all_gather", a, res, code, 0, 0, res, like)
    _c.all_gather(g, a, res, code)
    return _result(res, like)


def sum_scatter(x, *, group=None, out=None, dtype=None, async_op=False):
    """Sum over the ranks, then rank r keeps the r-th of size parts of axis 0."""
    a, code = _input(x, dtype)
    g = _group(group)
    n = g.size()
    if a.ndim == 0 or a.shape[0] % n:
        raise ValueError(f"distcomm: sum_scatter: axis 0 of shape {list(a.shape)} "
                         f"does not split into {n} equal parts")
    res = _output(out, (a.shape[0] // n,) + a.shape[1:], a.dtype, "sum_scatter")
    like = _like(x, code) if out is None else None
    if async_op:
        return _start(g, "reduce_scatter", a, res, code, _c.OPS["sum"], 0, res, like)
    _c.reduce_scatter(g, a, res, code, _c.OPS["sum"])
    return _result(res, like)


def send(x, dst, *, group=None, dtype=None, async_op=False):
    """Send x to rank dst of the group; returns x (as MLX returns the sent
    array: x itself for an mx.array, else x as a numpy array)."""
    a, code = _input(x, dtype)
    sent = x if _mx_of(x) is not None else a
    if async_op:
        return _start(_group(group), "send", a, None, code, 0, int(dst), sent)
    _c.send(_group(group), a, code, int(dst))
    return sent


def _storage(dtype):
    """numpy dtype that holds dtype (bfloat16 lives in uint16) and its code."""
    if _mx_of(dtype) is not None:
        dtype = _mx_dtype(dtype)
    if str(dtype) == "bfloat16":
        return _np.dtype(_np.uint16), _c.DTYPES["bfloat16"][0]
    dt = _np.dtype(dtype)
    return dt, _code(dt)


def recv(shape, dtype, src, *, group=None, out=None, async_op=False):
    """Receive an array of the given shape and dtype from rank src (an
    mx.array when dtype is an mx.Dtype)."""
    shape = _shape(shape)
    dt, code = _storage(dtype)
    g = _group(group)
    res = _output(out, shape, dt, "recv")
    like = _like(dtype, code) if out is None else None
    if async_op:
        return _start(g, "recv", None, res, code, 0, int(src), res, like)
    _c.recv(g, res, code, int(src))
    return _result(res, like)


def _shape(shape):
    """A shape as a tuple of ints (an int, a list, or an mx.array's shape)."""
    if isinstance(shape, (int, _np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def recv_like(x, src, *, group=None, out=None, dtype=None):
    """Receive an array with the shape and dtype of x from rank src (an
    mx.array when x is one)."""
    if _mx_of(x) is not None:
        return recv(x.shape, dtype if dtype is not None else x.dtype, src,
                    group=group, out=out)
    a = _np.asarray(x)
    return recv(a.shape, dtype if dtype is not None else a.dtype, src,
                group=group, out=out)


def _finish(req, async_op):
    return req if async_op else req.wait()


def broadcast(x, root=0, *, group=None, out=None, dtype=None, async_op=False):
    """Root's x on every rank: each rank passes an array of the same shape
    and dtype (its contents are only read on root) and gets root's."""
    a, code = _input(x, dtype)
    g = _group(group)
    root = _root(root, g)
    res = _output(out, a.shape, a.dtype, "broadcast")
    if g.rank() == root:
        _np.copyto(res, a)
    like = _like(x, code) if out is None else None
    return _finish(_start(g, "broadcast", None, res, code, 0, root, res, like), async_op)


def barrier(group=None):
    """Returns once every rank of the group has entered it (after the
    requests issued before it)."""
    _c.barrier(_group(group))


def _root(root, g):
    root = int(root)
    if not 0 <= root < g.size():
        raise ValueError(f"distcomm: root {root} is out of range (group size {g.size()})")
    return root


def all_to_all(x, *, group=None, out=None, dtype=None, async_op=False):
    """Axis 0 of x cut into size equal parts: part q goes to rank q, and the
    result holds rank q's part for this rank at part q (same shape as x)."""
    a, code = _input(x, dtype)
    g = _group(group)
    n = g.size()
    if a.ndim == 0 or a.shape[0] % n:
        raise ValueError(f"distcomm: all_to_all: axis 0 of shape {list(a.shape)} "
                         f"does not split into {n} equal parts")
    res = _output(out, a.shape, a.dtype, "all_to_all")
    like = _like(x, code) if out is None else None
    return _finish(_start(g, "all_to_all", a, res, code, 0, 0, res, like), async_op)


def gather(x, root=0, *, group=None, out=None, dtype=None, async_op=False):
    """Every rank's x concatenated on axis 0 in rank order, on root only
    (other ranks get None)."""
    a, code = _input(x, dtype)
    g = _group(group)
    root = _root(root, g)
    res = None
    if g.rank() == root:
        shape = (g.size(),) if a.ndim == 0 else (g.size() * a.shape[0],) + a.shape[1:]
        res = _output(out, shape, a.dtype, "gather")
    like = _like(x, code) if out is None else None
    return _finish(_start(g, "gather", a, res, code, 0, root, res, like), async_op)


def scatter(x, shape, dtype, root=0, *, group=None, out=None, async_op=False):
    """Root's x (size parts on axis 0) is cut up: rank q gets part q, an
    array of the given shape and dtype (an mx.array when dtype is an mx.Dtype).
    x is only read on root (None elsewhere)."""
    shape = _shape(shape)
    dt, code = _storage(dtype)
    g = _group(group)
    root = _root(root, g)
    a = None
    if g.rank() == root:
        a, code2 = _input(x, dtype)
        if code2 != code:
            raise TypeError(f"distcomm: scatter: x is {a.dtype}, dtype is {dtype}")
    res = _output(out, shape, dt, "scatter")
    like = _like(dtype, code) if out is None else None
    return _finish(_start(g, "scatter", a, res, code, 0, root, res, like), async_op)


def reduce(x, root=0, op="sum", *, group=None, out=None, dtype=None, async_op=False):
    """op ("sum", "max", "min", "prod") over the ranks of x, on root only
    (other ranks get None)."""
    a, code = _input(x, dtype)
    g = _group(group)
    root = _root(root, g)
    if op not in _c.OPS:
        raise ValueError(f"distcomm: reduce: op {op!r} is not one of {sorted(_c.OPS)}")
    res = _output(out, a.shape, a.dtype, "reduce") if g.rank() == root else None
    like = _like(x, code) if out is None else None
    return _finish(_start(g, "reduce", a, res, code, _c.OPS[op], root, res, like), async_op)


from . import nn  # noqa: E402,F401  (distcomm.nn after the functions it uses)
