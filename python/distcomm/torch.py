"""distcomm.torch: distcomm as a ``torch.distributed`` backend named "distcomm".

    import torch.distributed as dist
    import distcomm.torch  # registers the backend

    dist.init_process_group("distcomm")  # under distcomm-launch: nothing else to set
    model = torch.nn.parallel.DistributedDataParallel(model)

Importing this module registers the backend with
``torch.distributed.Backend.register_backend``. Under ``distcomm-launch`` the
rank and size come from MLX_RANK and MLX_HOSTFILE; without them, torchrun's
RANK is taken as MLX_RANK when MLX_HOSTFILE names a hostfile. torch also
needs a key-value store: when MASTER_ADDR is unset, ``env://`` (the default
init_method) gets one here, a store served by rank 0 on its hostfile
address only (distcomm/_store.py: torch 1.13's TCPStore listens on every
interface), whose port the ranks learn through distcomm (distcomm-launch sets
MASTER_ADDR/MASTER_PORT for scripts that do not import this module; under
it this store is used all the same); ``init_method="distcomm://"`` asks
for that explicitly. Started with torch's variables only (torchrun, by
hand: no hostfile, no coordinator), the coordinator's address and a job
token go through torch's store (_store_rendezvous). ``new_group`` maps to ``Group.split`` (import
this module before calling it: every rank must take part in a split, and
torch calls a backend only on the members, so ``new_group`` is wrapped).
On torch 2.13, ``shrink_group(lost_ranks)`` (after a rank is lost, on every
survivor) maps to ``Group.shrink``: see ``shrink_group`` below.

Tensors: CPU tensors of bool, uint8, int8-int64, float16, bfloat16,
float32, float64 and complex64. Contiguous ones are read and written in
place (DLPack, no copy); others are copied and copied back. Anything else
(CUDA, sparse, complex128, a reduce op other than SUM, AVG, PRODUCT, MIN,
MAX) raises ``distcomm.NotSupportedError`` on the rank that asked, before
any communication. Failures of the library raise its exceptions
(``distcomm.PeerLostError`` naming the rank, ``TimeoutError``,
``MismatchError``).

Every op starts one of the library's non-blocking requests (dc_i*, run on
the group's progress thread, one at a time in issue order): async_op=True
returns at once, and the Work's wait() waits for the request; blocking calls
and small ops run on the calling thread. DDP's reducer gets a Work whose
future the completer thread completes (see ProcessGroupDistcomm and
_PyWork). alltoall, alltoall_base, gather, scatter and reduce are the
library's all_to_all(v), gather, scatter and reduce_to. ``isend``/``irecv``
are requests too: a lone isend holds back the requests behind it until its
recv is posted, as a blocking send would; ``batch_isend_irecv`` orders its
operations so that it cannot deadlock.
"""
import importlib
import inspect
import json
import os
import queue
import secrets
import socket
import sys
import threading
import weakref

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import _create_work_from_future
from torch.distributed import distributed_c10d as _c10d
from torch.distributed.constants import default_pg_timeout

from . import _distcomm as _c
from . import _store as _jobstore
from . import InvalidArgumentError, NotSupportedError
from . import init as _init

# (torch.distributed.rendezvous is also the name of a function there)
_rdzv = importlib.import_module("torch.distributed.rendezvous")

__all__ = ["ProcessGroupDistcomm", "BACKEND"]

BACKEND = "distcomm"

_CODES = {dt: _c.DTYPES[name][0] for dt, name in [
    (torch.bool, "bool"), (torch.uint8, "uint8"), (torch.int8, "int8"),
    (torch.int16, "int16"), (torch.int32, "int32"), (torch.int64, "int64"),
    (torch.float16, "float16"), (torch.bfloat16, "bfloat16"),
    (torch.float32, "float32"), (torch.float64, "float64"),
    (torch.complex64, "complex64")]}
_SUPPORTED = ("bool, uint8, int8, int16, int32, int64, float16, bfloat16, "
              "float32, float64, complex64")
_RED = dist.ReduceOp.RedOpType
_OPS = {_RED.SUM: "sum", _RED.AVG: "avg", _RED.PRODUCT: "prod",
        _RED.MIN: "min", _RED.MAX: "max"}
_INT64 = _c.DTYPES["int64"][0]
_ABORTED = dict(_c.ERRORS)["ERR_ABORTED"]  # distcomm.AbortedError
_MISMATCH = dict(_c.ERRORS)["ERR_MISMATCH"]  # distcomm.MismatchError


# ---- tensors ---------------------------------------------------------------

def _code(t, what):
    """The library dtype code of t; NotSupportedError for what we cannot take."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"distcomm: {what}: expected a tensor, not {type(t).__name__}")
    if t.device.type != "cpu":
        raise NotSupportedError(
            f"distcomm: {what}: the tensor is on {t.device}; the distcomm backend "
            "takes CPU tensors only (use 'nccl' for CUDA tensors)")
    if t.layout != torch.strided:
        raise NotSupportedError(f"distcomm: {what}: {t.layout} tensors are not supported")
    code = _CODES.get(t.dtype)
    if code is None:
        raise NotSupportedError(f"distcomm: {what}: dtype {t.dtype} is not supported "
                                f"(supported: {_SUPPORTED})")
    return code


def _mem(t):
    """t's memory as the C ops take it (through DLPack, without a copy)."""
    if t.dtype is torch.bool:
        t = t.view(torch.uint8)  # torch 1.13 exports no bool through DLPack
    return t.detach() if t.requires_grad else t


def _dense(t):
    """t itself when its memory can be used as is, else a contiguous copy
    (the caller copies an output back when the result is not t)."""
    if t.is_contiguous() and not t.is_conj() and not t.is_neg():
        return t
    return t.resolve_conj().resolve_neg().contiguous()


def _back(w, t):
    if w is not t:
        with torch.no_grad():
            t.copy_(w)


def _one(tensors, what):
    """The single tensor of a torch tensor list (one device per process)."""
    if isinstance(tensors, torch.Tensor):
        return tensors
    if len(tensors) != 1:
        raise NotSupportedError(f"distcomm: {what}: takes 1 tensor per process, "
                                f"got {len(tensors)} (multi-device lists are not supported)")
    return tensors[0]


def _done(result):
    """A Work that is already complete, whose future holds result."""
    fut = torch.futures.Future()
    fut.set_result(result)
    return _create_work_from_future(fut)


def _reduce_op(opts, t, what):
    """The library op name for opts (AllreduceOptions, a ReduceOp or None)."""
    red = getattr(opts, "reduceOp", opts)
    red = getattr(red, "op", red)  # a ReduceOp wraps a RedOpType
    if red is None:
        return "sum"
    name = _OPS.get(red)
    if name is None:
        raise NotSupportedError(f"distcomm: {what}: ReduceOp.{getattr(red, 'name', red)} "
                                "is not supported (SUM, AVG, PRODUCT, MIN and MAX are)")
    if name == "avg" and not (t.is_floating_point() or t.is_complex()):
        raise NotSupportedError(f"distcomm: {what}: AVG needs a floating-point "
                                f"tensor, not {t.dtype}")
    if name in ("min", "max") and t.is_complex():
        raise NotSupportedError(f"distcomm: {what}: {name.upper()} of complex "
                                "tensors is not supported")
    return name


def _check_like(ts, ref, what):
    """Every tensor of ts has ref's dtype and element count."""
    for t in ts:
        _code(t, what)
        if t.dtype != ref.dtype or t.numel() != ref.numel():
            raise ValueError(f"distcomm: {what}: every tensor must be {ref.dtype} with "
                             f"{ref.numel()} elements, got {t.dtype} with {t.numel()}")


# ---- completing Work -------------------------------------------------------

class _Completer:
    """The thread that completes a process group's Work: it waits for the
    group's requests in issue order (the order they complete in), with the
    GIL released and without claiming the group, runs each one's finishing
    step (a copy back, AVG's division) and completes its torch future
    (complete(result, error), from _work_of).
    torch's Work.wait() and DDP's reducer wait on that future. Every wait is
    bounded: a request completes or fails within the group's timeout.

    Not a daemon: at exit, before the interpreter finalizes, it is told to
    stop (_stop_completers) and joined, after what it has been given. A
    daemon thread that is still completing a future as the interpreter
    finalizes is ended with pthread_exit inside torch's C++ callbacks (a
    DDP hook's .then() chain, whose last future wakes the waiter before the
    chain's first callback is dropped), whose noexcept destructors stop the
    unwind: the process aborted with "terminate called after throwing"
    (issue 17)."""

    def __init__(self):
        self._q = queue.SimpleQueue()
        self._thread = None
        self.completed = 0  # futures completed (or being completed) so far; tests read it
        _completers.add(self)

    def put(self, req, after, complete):
        if self._thread is None:
            self._thread = threading.Thread(target=self._run,
                                            name="distcomm.torch completer",
                                            daemon=not _STOPPED_BEFORE_JOIN)
            self._thread.start()
        self._q.put((req, after, complete))

    def stop(self):
        if self._thread is not None:
            self._q.put(None)

    def _run(self):  # holds no reference to the process group
        while True:
            item = self._q.get()
            if item is None:
                return
            req, after, complete = item
            try:
                req.wait_detached()
                result, error = after(), None
            except BaseException as e:  # noqa: BLE001  (it goes to the waiter)
                result, error = None, e
            # Counted first: whoever the future wakes sees the count.
            self.completed += 1
            complete(result, error)
            del item, req, after, complete, result, error


_completers = weakref.WeakSet()


def _stop_completers():
    """At exit, before the threads are joined: each completer ends after
    the requests it has (each bounded by its group's timeout)."""
    for completer in list(_completers):
        completer.stop()


# threading's own exit hook (CPython >= 3.9) runs before it joins the
# threads that are not daemons; atexit's would run after that join, which
# would wait forever: without the hook the completers stay daemons.
_STOPPED_BEFORE_JOIN = hasattr(threading, "_register_atexit")
if _STOPPED_BEFORE_JOIN:
    threading._register_atexit(_stop_completers)


class _AllWork(dist.Work):
    """The Work of a coalesced batch (torch 2's _end_coalescing): done when
    each of its works is."""

    def __init__(self, works):
        super().__init__()
        self._works = works

    def wait(self, timeout=None):
        for w in self._works:
            w.wait()
        return True

    def is_completed(self):
        return all(w.is_completed() for w in self._works)


class _PyWork(dist.Work):
    """The Work that torch.distributed's Python functions get. wait() waits
    for the request on the calling thread (no hand-off to the completer:
    the library may run the request right there) and raises the library's
    exception, as a blocking call would; the Work of _create_work_from_future
    cannot serve them (in torch 1.13 its wait() returns True even when its
    future failed). get_future() hands the request to the completer, which
    completes the future in the background; that future carries a failure
    as a C++ error (see _cpp_work), since a DDP communication hook may hand
    it to the reducer. A _PyWork made without a request (batch_isend_irecv)
    is completed through _complete by whoever runs its op."""

    def __init__(self, req=None, after=None, completer=None):
        super().__init__()
        self._req, self._after, self._completer = req, after, completer
        self._raw = self._fut = None
        self._done, self._result, self._error = False, None, None

    def _complete(self, result, error):
        self._result, self._error, self._done = result, error, True
        if self._raw is not None:
            self._raw.set_result(result if error is None else _Failed(error))

    def _finish(self):
        if not self._done:
            if self._req is not None:  # still ours: wait here
                req, after, self._req, self._after = self._req, self._after, None, None
                try:
                    req.wait()
                    result, error = after(), None
                except BaseException as e:  # noqa: BLE001  (kept, raised below)
                    result, error = None, e
                self._complete(result, error)
            else:  # the completer has it: bounded by the group's timeout
                try:
                    self.get_future().wait()
                except Exception:  # noqa: BLE001  (self._error says what)
                    pass
        if self._error is not None:
            raise self._error
        return self._result

    def wait(self, timeout=None):
        self._finish()
        return True

    def is_completed(self):
        if self._done:
            return True
        return self._req is not None and self._req.is_completed()

    def is_success(self):
        if not self.is_completed():
            raise RuntimeError("distcomm: the Work has not completed")
        try:
            self._finish()
        except Exception:  # noqa: BLE001
            return False
        return True

    def result(self):
        return self._finish()

    def get_future(self):
        if self._fut is None:
            self._raw = torch.futures.Future()
            self._fut = self._raw.then(_reraise)
            if self._done:
                self._complete(self._result, self._error)
            elif self._req is not None:
                self._completer.put(self._req, self._after, self._complete)
                self._req = self._after = None
        return self._fut

    def synchronize(self):
        pass


# torch 2 wraps its functions (c10d_logger): the file of the one inside
_C10D_PY = inspect.unwrap(_c10d.all_reduce).__code__.co_filename


class _Failed:
    """A failure carried as a future's value to _reraise."""

    def __init__(self, error):
        self.error = error


def _reraise(fut):
    value = fut.value()
    if isinstance(value, _Failed):
        raise value.error
    return value


def _caller():
    """Who called the process group's method: "blocking" for one of
    torch.distributed's Python functions called with async_op=False (it
    waits at once), "python" for one of them otherwise, "c++" for the rest
    (torch's C++, DDP's reducer). Told by the first frame outside this file
    (none: a call from C++ on a bare thread) and its async_op argument."""
    f = sys._getframe(1)
    here = _caller.__code__.co_filename
    while f is not None and f.f_code.co_filename == here:
        f = f.f_back
    if f is None or f.f_code.co_filename != _C10D_PY:
        return "c++"
    return "blocking" if f.f_locals.get("async_op", True) is False else "python"


def _cpp_work():
    """(work, complete) for torch's C++ (DDP's reducer, which needs getFuture,
    and DDP's set-up): the Work of _create_work_from_future, as a Python
    Work's getFuture is not reachable from C++ in torch 1.13, and
    complete(result, error). Its future must not hold a Python exception
    (the reducer rethrows it on a thread without the GIL, which crashes): a
    failure travels as a value through .then(_reraise), which torch turns
    into a C++ error "Got the following error when running the callback:
    PeerLostError: ..." that the reducer raises."""
    fut = torch.futures.Future()

    def complete(result, error):
        fut.set_result(result if error is None else _Failed(error))
    return _create_work_from_future(fut.then(_reraise)), complete


def _pending_work():
    """(work, complete) for a request not issued yet (batch_isend_irecv)."""
    if _caller() != "c++":
        work = _PyWork()
        work.get_future()  # made now: the completer completes it
        return work, work._complete
    return _cpp_work()


# ---- the process group -----------------------------------------------------

class ProcessGroupDistcomm(dist.ProcessGroup):
    """A torch.distributed process group over a distcomm.Group.

    Collectives start the library's non-blocking request (dc_i*), which runs
    on the group's progress thread, and return a Work at once: for
    torch.distributed's Python functions a Work whose wait() waits for the
    request (``async_op=True`` runs in the background until then); for
    torch's C++ (DDP's reducer) a Work whose future the completer thread
    completes when the request does, so that DDP's bucket all_reduces
    overlap backward. Ops whose payload is at most ``inline_bytes``, and
    those of torch.distributed's functions called with async_op=False, run
    to completion on the calling thread instead (the library runs the
    request right there; a thread hand-off costs more than a small op, and
    a blocking call gains nothing from one); their Work is already
    complete."""

    inline_bytes = 64 << 10

    def __init__(self, group, timeout=default_pg_timeout):
        super().__init__(group.rank(), group.size())
        self._g = group
        self._r, self._n = group.rank(), group.size()
        self._queue = None  # send/recv held by batch_isend_irecv
        self._queued_works = []
        self._completer = _Completer()
        weakref.finalize(self, self._completer.stop)
        if timeout != default_pg_timeout:  # torch's default: keep DISTCOMM_TIMEOUT
            group.set_timeout(timeout.total_seconds())

    def getBackendName(self):
        return BACKEND

    # torch 2 keeps a group's name in its C++ backend, which a Python
    # process group has none of: kept here (group_name, DeviceMesh)
    _name, _desc = "", ""
    _aborted = False

    def getGroupName(self):
        return self._name

    def setGroupName(self, name):
        self._name = name

    def getGroupDesc(self):
        return self._desc

    def setGroupDesc(self, desc):
        self._desc = desc

    @property
    def group(self):
        """The distcomm.Group underneath."""
        return self._g

    def __repr__(self):
        return f"<ProcessGroupDistcomm rank {self._r} of {self._n} ({self._g.backend})>"

    # -- requests

    def _work(self, req, nbytes, after):
        """The Work of a started request; after() (its finishing step)
        returns the future's value."""
        caller = _caller()
        if nbytes <= self.inline_bytes or caller == "blocking":
            req.wait()  # the library's exception, raised here
            return _done(after())
        if caller == "python" or not _TORCH1:
            work = _PyWork(req, after, self._completer)
            if caller == "c++":  # torch 2 reaches a Python Work's wait and
                work.get_future()  # get_future; the completer runs it now
            return work
        work, complete = _cpp_work()
        self._completer.put(req, after, complete)
        return work

    def _check_aborted(self):
        if self._aborted:
            raise _ABORTED(f"distcomm: the process group (rank {self._r} of {self._n}) "
                           "was aborted; make a new one")

    def _start(self, kind, send, recv, code, op="sum", peer=0):
        self._check_aborted()
        return _c.start(self._g, kind, None if send is None else _mem(send),
                        None if recv is None else _mem(recv), code,
                        _c.OPS["sum" if op == "avg" else op], peer, None)

    def _avg(self, w, op):
        if op == "avg":
            with torch.no_grad():
                w.div_(self._n)

    # -- reductions

    def allreduce(self, tensors, opts=None):
        t = _one(tensors, "allreduce")
        code = _code(t, "allreduce")
        op = _reduce_op(opts, t, "allreduce")
        w = _dense(t)
        req = self._start("all_reduce", w, w, code, op)

        def after():
            self._avg(w, op)
            _back(w, t)
            return [t]
        return self._work(req, _nbytes(t), after)

    def allreduce_coalesced(self, tensors, opts=None):
        """One all_reduce over the tensors laid end to end (one dtype)."""
        if not tensors:
            return _done([])
        code = _code(tensors[0], "allreduce_coalesced")
        for t in tensors:
            if _code(t, "allreduce_coalesced") != code:
                raise ValueError("distcomm: allreduce_coalesced: the tensors must "
                                 "share one dtype")
        op = _reduce_op(opts, tensors[0], "allreduce_coalesced")
        flat = torch.cat([t.detach().reshape(-1) for t in tensors])
        req = self._start("all_reduce", flat, flat, code, op)

        def after():
            self._avg(flat, op)
            with torch.no_grad():
                for t, part in zip(tensors, flat.split([t.numel() for t in tensors])):
                    t.copy_(part.view_as(t))
            return list(tensors)
        return self._work(req, _nbytes(flat), after)

    def reduce(self, tensors, opts=None):
        """The library's reduce_to: the root's tensor gets the result, the
        others' are left as they were."""
        t = _one(tensors, "reduce")
        code = _code(t, "reduce")
        op = _reduce_op(opts, t, "reduce")
        root = getattr(opts, "rootRank", 0)
        w = _dense(t)
        mine = self._r == root
        req = self._start("reduce", w, w if mine else None, code, op, root)

        def after():
            if mine:
                self._avg(w, op)
                _back(w, t)
            return [t]
        return self._work(req, _nbytes(t), after)

    def _reduce_scatter_flat(self, out, flat, code, op):
        w = _dense(out)
        req = self._start("reduce_scatter", flat, w, code, op)

        def after():
            self._avg(w, op)
            _back(w, out)
            return [out]
        return self._work(req, _nbytes(flat), after)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        out = _one(output_tensors, "reduce_scatter")
        ins = _one(input_tensors, "reduce_scatter")
        code = _code(out, "reduce_scatter")
        op = _reduce_op(opts, out, "reduce_scatter")
        if len(ins) != self._n:
            raise ValueError(f"distcomm: reduce_scatter: {len(ins)} inputs for "
                             f"{self._n} ranks")
        _check_like(ins, out, "reduce_scatter")
        flat = torch.cat([t.detach().reshape(-1) for t in ins])
        return self._reduce_scatter_flat(out, flat, code, op)

    def _reduce_scatter_base(self, output, input, opts=None):
        code = _code(output, "_reduce_scatter_base")
        if _code(input, "_reduce_scatter_base") != code or \
                input.numel() != output.numel() * self._n:
            raise ValueError(f"distcomm: _reduce_scatter_base: the input must be "
                             f"{self._n} x the output ({output.dtype}, "
                             f"{output.numel()} elements)")
        op = _reduce_op(opts, output, "_reduce_scatter_base")
        return self._reduce_scatter_flat(output, _dense(input), code, op)

    # -- copies

    def broadcast(self, tensors, opts=None):
        t = _one(tensors, "broadcast")
        code = _code(t, "broadcast")
        if getattr(opts, "rootTensor", 0) != 0:
            raise NotSupportedError("distcomm: broadcast: rootTensor must be 0")
        w = _dense(t)
        req = self._start("broadcast", None, w, code, peer=getattr(opts, "rootRank", 0))

        def after():
            _back(w, t)
            return [t]
        return self._work(req, _nbytes(t), after)

    def _all_gather_flat(self, out, inp, code, finish):
        w = _dense(out)
        req = self._start("all_gather", _dense(inp), w, code)

        def after():
            _back(w, out)
            return finish()
        return self._work(req, _nbytes(out), after)

    def allgather(self, output_tensors, input_tensors, opts=None):
        inp = _one(input_tensors, "allgather")
        outs = _one(output_tensors, "allgather")
        code = _code(inp, "allgather")
        if len(outs) != self._n:
            raise ValueError(f"distcomm: allgather: {len(outs)} outputs for {self._n} ranks")
        _check_like(outs, inp, "allgather")
        flat = torch.empty((self._n * inp.numel(),), dtype=inp.dtype)

        def finish():
            _unflatten(flat, outs)
            return list(outs)
        return self._all_gather_flat(flat, inp, code, finish)

    def _allgather_base(self, output, input, opts=None):
        code = _code(input, "_allgather_base")
        if _code(output, "_allgather_base") != code or \
                output.numel() != input.numel() * self._n:
            raise ValueError(f"distcomm: _allgather_base: the output must be "
                             f"{self._n} x the input ({input.dtype}, "
                             f"{input.numel()} elements)")
        return self._all_gather_flat(output, input, code, lambda: [output])

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        """One all_gather of the inputs laid end to end (one dtype)."""
        if len(output_lists) != self._n:
            raise ValueError(f"distcomm: allgather_coalesced: {len(output_lists)} "
                             f"output lists for {self._n} ranks")
        if not input_list:
            return _done([])
        code = _code(input_list[0], "allgather_coalesced")
        for outs in output_lists:
            if len(outs) != len(input_list):
                raise ValueError("distcomm: allgather_coalesced: each output list "
                                 "needs one tensor per input")
            for o, i in zip(outs, input_list):
                _check_like([o], i, "allgather_coalesced")
                if _code(i, "allgather_coalesced") != code:
                    raise ValueError("distcomm: allgather_coalesced: the tensors must "
                                     "share one dtype")
        flat = torch.cat([t.detach().reshape(-1) for t in input_list])
        every = torch.empty((self._n * flat.numel(),), dtype=flat.dtype)
        sizes = [t.numel() for t in input_list]

        def finish():
            with torch.no_grad():
                for outs, row in zip(output_lists, every.chunk(self._n)):
                    for o, part in zip(outs, row.split(sizes)):
                        o.copy_(part.view_as(o))
            return [o for outs in output_lists for o in outs]
        return self._all_gather_flat(every, flat, code, finish)

    # -- all to all, gather, scatter: the library's dc_iall_to_all(v),
    # dc_igather and dc_iscatter

    def _all_to_allv(self, send, scounts, recv, rcounts, code, after):
        """send's blocks of scounts elements (in rank order) to each rank,
        rcounts from each into recv (both contiguous, one dtype)."""
        self._check_aborted()
        soffs = [sum(scounts[:p]) for p in range(self._n)]
        roffs = [sum(rcounts[:p]) for p in range(self._n)]
        req = _c.start_v(self._g, _mem(send), scounts, soffs, _mem(recv), rcounts,
                         roffs, code, None)
        return self._work(req, max(_nbytes(send), _nbytes(recv)), after)

    def alltoall(self, output_tensors, input_tensors, opts=None):
        if len(output_tensors) != self._n or len(input_tensors) != self._n:
            raise ValueError(f"distcomm: alltoall: needs {self._n} inputs and "
                             f"{self._n} outputs")
        code = _code(input_tensors[0], "alltoall")
        for t in list(output_tensors) + list(input_tensors):
            if _code(t, "alltoall") != code:
                raise ValueError("distcomm: alltoall: the tensors must share one dtype")
        send = torch.cat([t.detach().reshape(-1) for t in input_tensors])
        rcounts = [t.numel() for t in output_tensors]
        recv = torch.empty((sum(rcounts),), dtype=send.dtype)

        def after():
            _unflatten(recv, output_tensors, rcounts)
            return list(output_tensors)
        return self._all_to_allv(send, [t.numel() for t in input_tensors], recv,
                                 rcounts, code, after)

    def _counts(self, t, sizes, what):
        """Element counts per rank of t split on dim 0 into sizes rows
        (equal parts when sizes is empty)."""
        if t.dim() == 0:
            raise ValueError(f"distcomm: alltoall_base: the {what} needs a dimension 0")
        rows = t.shape[0]
        if not sizes:
            if rows % self._n:
                raise ValueError(f"distcomm: alltoall_base: dim 0 of the {what} ({rows}) "
                                 f"does not split into {self._n} equal parts")
            sizes = [rows // self._n] * self._n
        if len(sizes) != self._n or sum(sizes) != rows or min(sizes) < 0:
            raise ValueError(f"distcomm: alltoall_base: {what} split sizes {list(sizes)} "
                             f"do not cover dim 0 ({rows}) in {self._n} parts")
        row = t.numel() // rows if rows else 0
        return [s * row for s in sizes]

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes,
                      opts=None):
        code = _code(input, "alltoall_base")
        if _code(output, "alltoall_base") != code:
            raise ValueError("distcomm: alltoall_base: input and output must share a dtype")
        scounts = self._counts(input, input_split_sizes, "input")
        rcounts = self._counts(output, output_split_sizes, "output")
        w_in, w_out = _dense(input), _dense(output)
        if w_in.data_ptr() == w_out.data_ptr():  # the library wants them apart
            w_in = w_in.clone()

        def after():
            _back(w_out, output)
            return [output]
        if not input_split_sizes and not output_split_sizes and \
                input.numel() == output.numel():
            req = self._start("all_to_all", w_in, w_out, code)
            return self._work(req, _nbytes(input), after)
        return self._all_to_allv(w_in, scounts, w_out, rcounts, code, after)

    def gather(self, output_tensors, input_tensors, opts=None):
        inp = _one(input_tensors, "gather")
        code = _code(inp, "gather")
        root = getattr(opts, "rootRank", 0)
        if self._r != root:
            req = self._start("gather", _dense(inp), None, code, peer=root)
            return self._work(req, _nbytes(inp), lambda: [])
        outs = _one(output_tensors, "gather")
        if len(outs) != self._n:
            raise ValueError(f"distcomm: gather: {len(outs)} outputs for {self._n} ranks")
        _check_like(outs, inp, "gather")
        flat = torch.empty((self._n * inp.numel(),), dtype=inp.dtype)
        req = self._start("gather", _dense(inp), flat, code, peer=root)

        def after():
            _unflatten(flat, outs)
            return list(outs)
        return self._work(req, _nbytes(flat), after)

    def scatter(self, output_tensors, input_tensors, opts=None):
        out = _one(output_tensors, "scatter")
        code = _code(out, "scatter")
        root = getattr(opts, "rootRank", 0)
        flat = None
        if self._r == root:
            ins = _one(input_tensors, "scatter")
            if len(ins) != self._n:
                raise ValueError(f"distcomm: scatter: {len(ins)} inputs for {self._n} ranks")
            _check_like(ins, out, "scatter")
            flat = torch.cat([t.detach().reshape(-1) for t in ins])
        w = _dense(out)
        req = self._start("scatter", flat, w, code, peer=root)

        def after():
            _back(w, out)
            return [out]
        return self._work(req, _nbytes(out) * (self._n if flat is not None else 1), after)

    # -- point to point

    def send(self, tensors, dstRank, tag=0):
        t = _one(tensors, "send")
        _code(t, "send")
        return self._p2p("send", t, dstRank)

    def recv(self, tensors, srcRank, tag=0):
        t = _one(tensors, "recv")
        _code(t, "recv")
        return self._p2p("recv", t, srcRank)

    def recv_anysource(self, tensors, tag=0):
        raise NotSupportedError("distcomm: recv from any source is not supported "
                                "(name the source rank)")

    def _start_p2p(self, kind, t, peer):
        """(request, after) of a send or recv."""
        w = _dense(t)
        if kind == "send":
            return self._start("send", w, None, _CODES[t.dtype], peer=peer), lambda: [t]

        def after():
            _back(w, t)
            return [t]
        return self._start("recv", None, w, _CODES[t.dtype], peer=peer), after

    def _p2p(self, kind, t, peer):
        """A send or recv. Requests run one at a time in issue order, so a
        lone isend waits for its recv before anything behind it runs (as a
        blocking send would)."""
        if not 0 <= peer < self._n or peer == self._r:
            raise InvalidArgumentError(f"distcomm: {kind}: peer {peer} is not another "
                                       f"rank of this group of {self._n}")
        if self._queue is None:
            req, after = self._start_p2p(kind, t, peer)
            return self._work(req, _nbytes(t), after)
        work, complete = _pending_work()
        self._queue.append((kind, t, peer, complete))
        self._queued_works.append(work)
        return work

    def _start_coalescing(self, device=None):
        if self._queue is not None:
            raise RuntimeError("distcomm: batch_isend_irecv calls cannot nest")
        self._queue, self._queued_works = [], []

    def _end_coalescing(self, device=None):
        """Issues the queued send/recv as requests: peer by peer in the order
        of the pair (min rank, max rank), the same on every rank, so each
        pair's turn comes on both sides together; in a pair the lower rank
        sends first. They run in the background; their futures complete
        when they do."""
        queue_, self._queue = self._queue or [], None
        peers = sorted({p for _, _, p, _ in queue_},
                       key=lambda p: (min(p, self._r), max(p, self._r)))
        order = []
        for p in peers:
            mine = [q for q in queue_ if q[2] == p]
            first = "send" if self._r < p else "recv"
            order += [q for q in mine if q[0] == first] + [q for q in mine if q[0] != first]
        for i, (kind, t, peer, complete) in enumerate(order):
            try:
                req, after = self._start_p2p(kind, t, peer)
            except Exception as e:
                for *_, c in order[i:]:
                    c(None, e)
                raise
            self._completer.put(req, after, complete)
        works, self._queued_works = self._queued_works, []
        return _AllWork(works)

    def barrier(self, opts=None):
        self._check_aborted()
        _c.barrier(self._g)  # after every request issued before it
        return _done([])

    # -- torch 2's names and forms (its Python functions call these on the
    # group; 1.13 called the names above)

    def all_gather_single(self, output, input, opts=None):
        return self._allgather_base(output, input, opts)

    def reduce_scatter_single(self, output, input, opts=None):
        return self._reduce_scatter_base(output, input, opts)

    def all_to_all_single(self, output, input, output_split_sizes,
                          input_split_sizes, opts=None):
        return self.alltoall_base(output, input, output_split_sizes,
                                  input_split_sizes, opts)

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        """One all_gather of the inputs laid end to end (torch 2's
        all_gather_into_tensor under _coalescing_manager; FSDP2's
        parameter gather): outputs[i] gets every rank's inputs[i]."""
        if len(outputs) != len(inputs):
            raise ValueError("distcomm: all_gather_single_coalesced: one output per input")
        if not inputs:
            return _done([])
        code = _code(inputs[0], "all_gather_single_coalesced")
        for o, i in zip(outputs, inputs):
            if _code(i, "all_gather_single_coalesced") != code or o.dtype != i.dtype or \
                    o.numel() != i.numel() * self._n:
                raise ValueError("distcomm: all_gather_single_coalesced: each output must "
                                 f"be {self._n} x its input, all of one dtype")
        flat = torch.cat([t.detach().reshape(-1) for t in inputs])
        every = torch.empty((self._n * flat.numel(),), dtype=flat.dtype)
        sizes = [t.numel() for t in inputs]

        def finish():
            with torch.no_grad():
                for r, row in enumerate(every.chunk(self._n)):
                    for o, part, k in zip(outputs, row.split(sizes), sizes):
                        o.view(-1)[r * k:(r + 1) * k].copy_(part)
            return list(outputs)
        return self._all_gather_flat(every, flat, code, finish)

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        """One reduce_scatter of the inputs laid out rank by rank (torch 2's
        reduce_scatter_tensor under _coalescing_manager): outputs[i] gets
        this rank's block of the reduced inputs[i]."""
        if len(outputs) != len(inputs):
            raise ValueError("distcomm: reduce_scatter_single_coalesced: one output per input")
        if not inputs:
            return _done([])
        code = _code(outputs[0], "reduce_scatter_single_coalesced")
        for o, i in zip(outputs, inputs):
            if _code(o, "reduce_scatter_single_coalesced") != code or o.dtype != i.dtype or \
                    i.numel() != o.numel() * self._n:
                raise ValueError("distcomm: reduce_scatter_single_coalesced: each input "
                                 f"must be {self._n} x its output, all of one dtype")
        op = _reduce_op(opts, outputs[0], "reduce_scatter_single_coalesced")
        blocks = [t.detach().reshape(-1).chunk(self._n) for t in inputs]
        flat = torch.cat([b[r] for r in range(self._n) for b in blocks])
        mine = torch.empty((sum(o.numel() for o in outputs),), dtype=flat.dtype)
        req = self._start("reduce_scatter", flat, mine, code, op)

        def after():
            self._avg(mine, op)
            _unflatten(mine, outputs)
            return list(outputs)
        return self._work(req, _nbytes(flat), after)

    def abort(self):
        """torch 2's abort: the group's waits in progress end with an
        error, and every later op raises at once."""
        self._aborted = True
        self._completer.stop()
        self._g.abort()

    def shutdown(self):
        """torch 2's destroy_process_group: stop completing Work."""
        self._completer.stop()

    # -- torch 2.13's shrink_group (see shrink_group below)

    supports_shrinking = True

    def shrink(self, ranks_to_exclude, shrink_flags=0, pg_options=None):
        """torch 2.13's Backend.shrink: the survivors' group from
        Group.shrink() (they agree on who is left, bounded by the timeout),
        checked against ranks_to_exclude. The new process group keeps the
        old order; this one raises AbortedError from then on."""
        self._check_aborted()
        new = self._g.shrink()
        kept = _all_ranks(new, self._r)
        gone = sorted(set(range(self._n)) - set(kept))
        if gone != sorted(ranks_to_exclude):
            raise _MISMATCH(
                f"distcomm: shrink_group on rank {self._r} of {self._n}: ranks_to_exclude "
                f"is {sorted(ranks_to_exclude)}, but the survivors that took part are "
                f"ranks {kept}, so the lost ranks are {gone}: call shrink_group({gone})")
        self._aborted = True  # torch destroys it: its later ops fail at once
        self._completer.stop()
        pg = ProcessGroupDistcomm(new)
        pg._parent = self._g  # the survivors' group may share its connections
        return pg

    def _shrink_backend(self, device):
        """_get_backend while shrink_group runs: torch 2.13 asks the group's
        backend for supports_shrinking and shrink(); a Python process group
        has no C++ backend, so it is its own (CPU only)."""
        if torch.device(device).type != "cpu":
            raise RuntimeError(f"distcomm: the process group has no {device} backend")
        return self


def _all_ranks(group, rank):
    """Every member's rank, as an all_gather of rank over group."""
    mine = torch.tensor([rank], dtype=torch.int64)
    every = torch.empty(group.size(), dtype=torch.int64)
    _c.start(group, "all_gather", mine, every, _INT64, 0, 0, None).wait()
    return every.tolist()


def _nbytes(t):
    return t.numel() * t.element_size()


def _unflatten(flat, outs, counts=None):
    """flat's consecutive parts into the tensors outs (counts elements each;
    equal parts when None)."""
    counts = counts or [o.numel() for o in outs]
    with torch.no_grad():
        for o, part in zip(outs, flat.split(counts)):
            o.copy_(part.view_as(o))


# ---- creating groups -------------------------------------------------------

def _adopt_torchrun_rank(rank=None):
    """torchrun's RANK (or torch's rank) as MLX_RANK, when a hostfile is given
    but no MLX_RANK."""
    env = os.environ
    if "MLX_RANK" not in env and "MLX_HOSTFILE" in env:
        r = env.get("RANK", rank if rank is not None and rank >= 0 else None)
        if r is not None:
            env["MLX_RANK"] = str(r)


def _store_host(store):
    """The host torch's store serves on (the address every rank reached it
    by): a TCPStore's, under torch's PrefixStores; else MASTER_ADDR."""
    while store is not None and not hasattr(store, "host"):
        store = getattr(store, "underlying_store", None)
    host = getattr(store, "host", None) or os.environ.get("MASTER_ADDR")
    if not host:
        raise InvalidArgumentError(
            "distcomm: cannot tell where rank 0 is: torch's store is not a TCPStore "
            "and MASTER_ADDR is unset (start under distcomm-launch, or set MASTER_ADDR)")
    return host


def _reserve_port(host):
    """A socket bound to a free port of host (SO_REUSEADDR, not listening:
    the coordinator binds the same port beside it; nobody else gets it)."""
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(
            host, 0, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr[:2] if family == socket.AF_INET else addr)
    except OSError as e:
        raise InvalidArgumentError(
            f"distcomm: rank 0 cannot listen on {host} (the address torch's store "
            f"was reached by, MASTER_ADDR): {e}") from None
    return sock


_KEY_COORD, _KEY_TOKEN = "distcomm/coordinator", "distcomm/job_token"


def _store_rendezvous(store, rank, size):
    """torchrun's variables only (no hostfile, no coordinator given): rank 0
    reserves a free port beside torch's store (MASTER_PORT is the store's),
    and, without DISTCOMM_JOB_TOKEN(_FILE), makes a job token; both reach
    the other ranks through torch's store. Returns the variables to set for
    the library's coordinator start (bootstrap/coord_env.c) and the
    reservation to close once it has started."""
    env = {"MLX_RANK": str(rank), "MLX_WORLD_SIZE": str(size)}
    # torchrun's agent store outlives a restart: keys of this attempt only
    attempt = "/" + os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    key_coord, key_token = _KEY_COORD + attempt, _KEY_TOKEN + attempt
    own_token = not (os.environ.get("DISTCOMM_JOB_TOKEN") or
                     os.environ.get("DISTCOMM_JOB_TOKEN_FILE"))
    sock = None
    if rank == 0:
        host = _store_host(store)
        sock = _reserve_port(host)
        port = sock.getsockname()[1]
        coord = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if own_token:
            store.set(key_token, secrets.token_hex(32))
        store.set(key_coord, coord)  # last: the others wait for it
    env["DISTCOMM_COORDINATOR"] = store.get(key_coord).decode()
    if own_token:
        env["DISTCOMM_JOB_TOKEN"] = store.get(key_token).decode()
    return env, sock


def _torch_started():
    """Started as torch starts jobs: no distcomm configuration at all (no
    hostfile, no coordinator of distcomm's or MLX's)."""
    env = os.environ
    return not any(env.get(k) for k in ("MLX_HOSTFILE", "DISTCOMM_COORDINATOR",
                                         "MLX_JACCL_COORDINATOR", "MLX_IBV_DEVICES"))


def _world(rank, size, store=None):
    _adopt_torchrun_rank(rank)
    if store is not None and _torch_started():
        g = _init_through(store, rank, size)
    else:
        g = _init(strict=size != 1)
    if (g.rank(), g.size()) != (rank, size):
        raise InvalidArgumentError(
            f"distcomm: torch says rank {rank} of {size}, but distcomm's "
            f"configuration (MLX_RANK, MLX_HOSTFILE) says rank {g.rank()} of {g.size()}")
    return g


def _init_through(store, rank, size):
    """The world group, its coordinator and token found through torch's
    store (_store_rendezvous); the variables are set only while it starts."""
    env, sock = _store_rendezvous(store, rank, size)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return _init(strict=True)
    finally:
        if sock is not None:
            sock.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_next_sub = []  # the split made by new_group for the creator to take


def _create(store, rank, size, timeout):
    """The creator registered with torch: the world, or new_group's split."""
    if _next_sub:
        return ProcessGroupDistcomm(_next_sub.pop(), timeout)
    if _c10d.GroupMember.WORLD is not None:
        raise RuntimeError("distcomm: a 'distcomm' subgroup must come from "
                           "torch.distributed.new_group after `import distcomm.torch`")
    return ProcessGroupDistcomm(_world(rank, size, store), timeout)


_torch_new_group = _c10d.new_group


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, **kwargs):
    """torch.distributed.new_group: every rank first takes part in the
    distcomm split the members' process group is made from (torch 2's
    DeviceMesh calls it once per subgroup, on every rank)."""
    world = _c10d.GroupMember.WORLD
    name = dist.Backend(backend) if backend else (
        _c10d.get_backend() if world is not None else None)
    if isinstance(world, ProcessGroupDistcomm) and name == BACKEND:
        if kwargs.get("use_local_synchronization"):
            raise NotSupportedError("distcomm: new_group: use_local_synchronization=True "
                                    "is not supported (every rank takes part in a split)")
        members = sorted(range(world.size()) if ranks is None else ranks)
        if all(0 <= r < world.size() for r in members):  # else torch says why
            sub = world.group.split(0 if world.rank() in members else -1)
            if sub is not None:
                _next_sub.append(sub)
    elif name == BACKEND:
        raise NotSupportedError("distcomm: new_group(backend='distcomm') needs "
                                "init_process_group('distcomm')")
    if timeout is None:
        timeout = default_pg_timeout  # torch 1.13 wants a timedelta
    try:
        return _torch_new_group(ranks, timeout, backend, pg_options, **kwargs)
    finally:
        _next_sub.clear()


new_group.__doc__ = _torch_new_group.__doc__


# ---- rendezvous ------------------------------------------------------------

def _rank0_host():
    """The address of rank 0 in MLX_HOSTFILE (the ring's JSON)."""
    path = os.environ["MLX_HOSTFILE"]
    with open(path) as f:
        hosts = json.load(f)
    try:
        addr = hosts[0][0]
        return addr.rsplit(":", 1)[0].strip("[]")
    except (IndexError, KeyError, TypeError, AttributeError):
        raise InvalidArgumentError(f"distcomm: {path} is not a ring hostfile "
                                   '([["ip:port", ...], ...])') from None


def _store(world, timeout):
    """A store served by rank 0 on its hostfile address (not TCPStore, which
    listens on every interface), on a free port that distcomm broadcasts."""
    host = _rank0_host()
    port = torch.zeros(1, dtype=torch.int64)
    store = None
    if world.rank() == 0:
        store = _jobstore.serve(host, timeout)
        port[0] = store.port
    _c.broadcast(world, port, _INT64, 0)
    store = store or _jobstore.JobStore(host, int(port[0]), timeout)
    _stores.append(store)  # torch holds only the C++ half: keep the Python one
    return store


_stores = []


def _distcomm_rendezvous(url, timeout=default_pg_timeout, **kwargs):
    """distcomm:// (and env:// without MASTER_ADDR under distcomm-launch)."""
    _adopt_torchrun_rank()
    world = _init(strict=True)
    yield _store(world, timeout), world.rank(), world.size()
    raise RuntimeError("distcomm: the distcomm:// rendezvous cannot run twice")


def _launched_by_distcomm():
    env = os.environ
    return "MLX_HOSTFILE" in env and ("MLX_RANK" in env or "RANK" in env)


_torch_env_rendezvous = _rdzv._rendezvous_handlers["env"]


def _env_rendezvous(url, **kwargs):
    """Under distcomm-launch (MLX_RANK and MLX_HOSTFILE) distcomm's store,
    although the launcher sets MASTER_ADDR/MASTER_PORT for scripts that do
    not import distcomm.torch (torch's TCPStore listens on every interface)."""
    env = os.environ
    launched = "MLX_RANK" in env and "MLX_HOSTFILE" in env and \
        env.get("RANK", env["MLX_RANK"]) == env["MLX_RANK"]  # else torch's says why
    if launched or ("MASTER_ADDR" not in env and _launched_by_distcomm()):
        return _distcomm_rendezvous(url, **kwargs)
    return _torch_env_rendezvous(url, **kwargs)


_torch_batch = _c10d.batch_isend_irecv


def batch_isend_irecv(p2p_op_list):
    """torch.distributed.batch_isend_irecv: torch 2 coalesces only for a
    plain ProcessGroup and would issue each op alone; on a distcomm group
    the ops are held and ordered as in torch 1.13 (_end_coalescing)."""
    group = (p2p_op_list[0].group if p2p_op_list else None) or _c10d.GroupMember.WORLD
    if not isinstance(group, ProcessGroupDistcomm) or _TORCH1:
        return _torch_batch(p2p_op_list)
    group._start_coalescing()
    try:
        works = [op.op(op.tensor, op.peer, op.group, op.tag) for op in p2p_op_list]
    finally:
        group._end_coalescing()
    return [w for w in works if w is not None]


batch_isend_irecv.__doc__ = _torch_batch.__doc__
_TORCH1 = torch.__version__.startswith("1.")

_torch_shrink_group = getattr(_c10d, "shrink_group", None)  # torch 2.13, not 1.13


def shrink_group(ranks_to_exclude, group=None, shrink_flags=0, pg_options=None):
    """torch.distributed.shrink_group: on a distcomm group, torch's own,
    with the group standing in for its backend (_shrink_backend) and the
    survivors' ProcessGroupDistcomm as the new group (torch would wrap a
    C++ backend, which a Python one cannot be)."""
    target = group if group is not None else _c10d.GroupMember.WORLD
    if not isinstance(target, ProcessGroupDistcomm):
        return _torch_shrink_group(ranks_to_exclude, group, shrink_flags, pg_options)
    target._get_backend = target._shrink_backend
    try:
        return _torch_shrink_group(ranks_to_exclude, group, shrink_flags, pg_options)
    finally:
        target.__dict__.pop("_get_backend", None)


_torch_create_shrunk = getattr(_c10d, "_create_shrunk_process_group", None)


def _create_shrunk_process_group(new_backend, remaining_ranks, metadata, is_default_group):
    """torch's step that wraps the shrunk backend in a new ProcessGroup:
    a ProcessGroupDistcomm is that group already; it gets torch's name."""
    if not isinstance(new_backend, ProcessGroupDistcomm):
        return _torch_create_shrunk(new_backend, remaining_ranks, metadata, is_default_group)
    new_backend._set_group_name(metadata["new_group_name"])
    new_backend._set_group_desc("default:shrunken" if is_default_group
                                else f"{metadata['original_group_name']}:shrunk")
    return new_backend


if _torch_shrink_group is not None:
    shrink_group.__doc__ = _torch_shrink_group.__doc__


def _register():
    if BACKEND.upper() in dist.Backend._plugins:
        return
    if _TORCH1:
        dist.Backend.register_backend(BACKEND, _create)
    else:  # torch 2 asks which devices a backend serves
        dist.Backend.register_backend(BACKEND, _create, devices=["cpu"])
    _rdzv.register_rendezvous_handler("distcomm", _distcomm_rendezvous)
    # torch offers no hook for the default init_method: env:// is replaced
    # by a handler that defers to torch's whenever MASTER_ADDR is set.
    _rdzv._rendezvous_handlers["env"] = _env_rendezvous
    dist.new_group = _c10d.new_group = new_group
    dist.batch_isend_irecv = _c10d.batch_isend_irecv = batch_isend_irecv
    if _torch_shrink_group is not None and _torch_create_shrunk is not None:
        dist.shrink_group = _c10d.shrink_group = shrink_group
        _c10d._create_shrunk_process_group = _create_shrunk_process_group
    mesh = sys.modules.get("torch.distributed.device_mesh")
    if mesh is not None and hasattr(mesh, "new_group"):  # torch 2: imported by name
        mesh.new_group = new_group


def register():
    """Registers the "distcomm" backend (importing this module does it):
    for hooks that name a function to run in each worker, e.g. Ray's
    runtime_env={"worker_process_setup_hook": "distcomm.torch.register"}."""
    _register()


_register()
