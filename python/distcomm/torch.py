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
init_method) gets one here, a TCPStore on rank 0's hostfile address whose
port the ranks learn through distcomm (until the coordinator issue gives
distcomm-launch MASTER_ADDR and MASTER_PORT); ``init_method="distcomm://"``
asks for that explicitly. ``new_group`` maps to ``Group.split`` (import
this module before calling it: every rank must take part in a split, and
torch calls a backend only on the members, so ``new_group`` is wrapped).

Tensors: CPU tensors of bool, uint8, int8-int64, float16, bfloat16,
float32, float64 and complex64. Contiguous ones are read and written in
place (DLPack, no copy); others are copied and copied back. Anything else
(CUDA, sparse, complex128, a reduce op other than SUM, AVG, PRODUCT, MIN,
MAX) raises ``distcomm.NotSupportedError`` on the rank that asked, before
any communication. Failures of the library raise its exceptions
(``distcomm.PeerLostError`` naming the rank, ``TimeoutError``,
``MismatchError``).

Every call runs to completion before it returns: ``async_op=True`` gives a
Work that is already complete. alltoall, alltoall_base, gather, scatter and
reduce are built here from send/recv and all_reduce. Both are stopgaps:
they switch to the C library's non-blocking requests and its all_to_all,
gather, scatter and reduce when those land (issue 16). ``isend``/``irecv`` therefore block;
``batch_isend_irecv`` orders its operations so that it cannot deadlock.
"""
import importlib
import json
import os

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import _create_work_from_future
from torch.distributed import distributed_c10d as _c10d
from torch.distributed.constants import default_pg_timeout

from . import _distcomm as _c
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
    """A Work that is already complete, whose future holds result. (Until
    the library's non-blocking requests land, issue 16: then a Work whose
    future completes when the request does.)"""
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


# ---- the process group -----------------------------------------------------

class ProcessGroupDistcomm(dist.ProcessGroup):
    """A torch.distributed process group over a distcomm.Group."""

    def __init__(self, group, timeout=default_pg_timeout):
        super().__init__(group.rank(), group.size())
        self._g = group
        self._r, self._n = group.rank(), group.size()
        self._queue = None  # send/recv held by batch_isend_irecv
        if timeout != default_pg_timeout:  # torch's default: keep DISTCOMM_TIMEOUT
            group.set_timeout(timeout.total_seconds())

    def getBackendName(self):
        return BACKEND

    @property
    def group(self):
        """The distcomm.Group underneath."""
        return self._g

    def __repr__(self):
        return f"<ProcessGroupDistcomm rank {self._r} of {self._n} ({self._g.backend})>"

    # -- reductions

    def _all_reduce(self, send, recv, code, op):
        """recv = op over the ranks of send (both contiguous)."""
        _c.all_reduce(self._g, _mem(send), _mem(recv), code,
                      _c.OPS["sum" if op == "avg" else op])
        if op == "avg":
            with torch.no_grad():
                recv.div_(self._n)

    def allreduce(self, tensors, opts=None):
        t = _one(tensors, "allreduce")
        code = _code(t, "allreduce")
        op = _reduce_op(opts, t, "allreduce")
        w = _dense(t)
        self._all_reduce(w, w, code, op)
        _back(w, t)
        return _done([t])

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
        self._all_reduce(flat, flat, code, op)
        with torch.no_grad():
            for t, part in zip(tensors, flat.split([t.numel() for t in tensors])):
                t.copy_(part.view_as(t))
        return _done(list(tensors))

    def reduce(self, tensors, opts=None):
        """all_reduce, kept on the root only (the others' tensors are left as
        they were); changes to the library's dc_reduce with issue 16."""
        t = _one(tensors, "reduce")
        code = _code(t, "reduce")
        op = _reduce_op(opts, t, "reduce")
        root = getattr(opts, "rootRank", 0)
        w = _dense(t)
        self._all_reduce(w, w if self._r == root else torch.empty_like(w), code, op)
        if self._r == root:
            _back(w, t)
        return _done([t])

    def _reduce_scatter_flat(self, out, flat, code, op):
        w = _dense(out)
        _c.reduce_scatter(self._g, _mem(flat), _mem(w), code,
                          _c.OPS["sum" if op == "avg" else op])
        if op == "avg":
            with torch.no_grad():
                w.div_(self._n)
        _back(w, out)

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
        self._reduce_scatter_flat(out, flat, code, op)
        return _done([out])

    def _reduce_scatter_base(self, output, input, opts=None):
        code = _code(output, "_reduce_scatter_base")
        if _code(input, "_reduce_scatter_base") != code or \
                input.numel() != output.numel() * self._n:
            raise ValueError(f"distcomm: _reduce_scatter_base: the input must be "
                             f"{self._n} x the output ({output.dtype}, "
                             f"{output.numel()} elements)")
        op = _reduce_op(opts, output, "_reduce_scatter_base")
        self._reduce_scatter_flat(output, _dense(input), code, op)
        return _done([output])

    # -- copies

    def broadcast(self, tensors, opts=None):
        t = _one(tensors, "broadcast")
        code = _code(t, "broadcast")
        if getattr(opts, "rootTensor", 0) != 0:
            raise NotSupportedError("distcomm: broadcast: rootTensor must be 0")
        w = _dense(t)
        _c.broadcast(self._g, _mem(w), code, getattr(opts, "rootRank", 0))
        _back(w, t)
        return _done([t])

    def _all_gather_flat(self, out, inp, code):
        w = _dense(out)
        _c.all_gather(self._g, _mem(_dense(inp)), _mem(w), code)
        _back(w, out)

    def allgather(self, output_tensors, input_tensors, opts=None):
        inp = _one(input_tensors, "allgather")
        outs = _one(output_tensors, "allgather")
        code = _code(inp, "allgather")
        if len(outs) != self._n:
            raise ValueError(f"distcomm: allgather: {len(outs)} outputs for {self._n} ranks")
        _check_like(outs, inp, "allgather")
        flat = torch.empty((self._n * inp.numel(),), dtype=inp.dtype)
        self._all_gather_flat(flat, inp, code)
        with torch.no_grad():
            for o, part in zip(outs, flat.chunk(self._n) if inp.numel() else [flat] * self._n):
                o.copy_(part.view_as(o))
        return _done(list(outs))

    def _allgather_base(self, output, input, opts=None):
        code = _code(input, "_allgather_base")
        if _code(output, "_allgather_base") != code or \
                output.numel() != input.numel() * self._n:
            raise ValueError(f"distcomm: _allgather_base: the output must be "
                             f"{self._n} x the input ({input.dtype}, "
                             f"{input.numel()} elements)")
        self._all_gather_flat(output, input, code)
        return _done([output])

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
        self._all_gather_flat(every, flat, code)
        sizes = [t.numel() for t in input_list]
        with torch.no_grad():
            for outs, row in zip(output_lists, every.chunk(self._n)):
                for o, part in zip(outs, row.split(sizes)):
                    o.copy_(part.view_as(o))
        return _done([o for outs in output_lists for o in outs])

    # -- point to point, and what is built from it: alltoall, alltoall_base,
    # gather and scatter switch to the library's dc_all_to_all(v), dc_gather
    # and dc_scatter when those land (issue 16)

    def _send(self, t, peer):
        w = _dense(t)
        _c.send(self._g, _mem(w), _CODES[t.dtype], peer)

    def _recv(self, t, peer):
        w = _dense(t)
        _c.recv(self._g, _mem(w), _CODES[t.dtype], peer)
        _back(w, t)

    def _exchange(self, peer, send, recv):
        """send to peer and receive from it; the lower rank sends first, so a
        pair never waits on each other whatever the sizes."""
        if self._r < peer:
            self._send(send, peer)
            self._recv(recv, peer)
        else:
            self._recv(recv, peer)
            self._send(send, peer)

    def _pairwise(self, sends, recvs):
        """sends[p] goes to rank p and recvs[p] comes from it. Step k pairs
        rank r with (k - r) mod n on every rank, so each step is a set of
        disjoint exchanges."""
        with torch.no_grad():
            recvs[self._r].copy_(sends[self._r].reshape(recvs[self._r].shape))
        for k in range(self._n):
            p = (k - self._r) % self._n
            if p != self._r:
                self._exchange(p, sends[p], recvs[p])

    def alltoall(self, output_tensors, input_tensors, opts=None):
        if len(output_tensors) != self._n or len(input_tensors) != self._n:
            raise ValueError(f"distcomm: alltoall: needs {self._n} inputs and "
                             f"{self._n} outputs")
        for o, i in zip(output_tensors, input_tensors):
            if _code(o, "alltoall") != _code(i, "alltoall"):
                raise ValueError("distcomm: alltoall: inputs and outputs must share a dtype")
        if output_tensors[self._r].numel() != input_tensors[self._r].numel():
            raise ValueError("distcomm: alltoall: this rank's own input and output "
                             "differ in size")
        self._pairwise(list(input_tensors), list(output_tensors))
        return _done(list(output_tensors))

    def _split(self, t, sizes, what):
        """t split on dim 0 into size parts (equal when sizes is empty)."""
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
        return list(t.split(list(sizes)))

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes,
                      opts=None):
        code = _code(input, "alltoall_base")
        if _code(output, "alltoall_base") != code:
            raise ValueError("distcomm: alltoall_base: input and output must share a dtype")
        w_in, w_out = _dense(input), _dense(output)
        sends = self._split(w_in, input_split_sizes, "input")
        recvs = self._split(w_out, output_split_sizes, "output")
        if sends[self._r].shape != recvs[self._r].shape:
            raise ValueError("distcomm: alltoall_base: this rank's own input and "
                             "output parts differ in size")
        self._pairwise(sends, recvs)
        _back(w_out, output)
        return _done([output])

    def gather(self, output_tensors, input_tensors, opts=None):
        inp = _one(input_tensors, "gather")
        _code(inp, "gather")
        root = getattr(opts, "rootRank", 0)
        if self._r != root:
            self._send(inp, root)
            return _done([])
        outs = _one(output_tensors, "gather")
        if len(outs) != self._n:
            raise ValueError(f"distcomm: gather: {len(outs)} outputs for {self._n} ranks")
        _check_like(outs, inp, "gather")
        for p in range(self._n):
            if p == root:
                with torch.no_grad():
                    outs[p].copy_(inp.view_as(outs[p]))
            else:
                self._recv(outs[p], p)
        return _done(list(outs))

    def scatter(self, output_tensors, input_tensors, opts=None):
        out = _one(output_tensors, "scatter")
        _code(out, "scatter")
        root = getattr(opts, "rootRank", 0)
        if self._r != root:
            self._recv(out, root)
            return _done([out])
        ins = _one(input_tensors, "scatter")
        if len(ins) != self._n:
            raise ValueError(f"distcomm: scatter: {len(ins)} inputs for {self._n} ranks")
        _check_like(ins, out, "scatter")
        for p in range(self._n):
            if p == root:
                with torch.no_grad():
                    out.copy_(ins[p].view_as(out))
            else:
                self._send(ins[p], p)
        return _done([out])

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

    def _p2p(self, kind, t, peer):
        if not 0 <= peer < self._n or peer == self._r:
            raise InvalidArgumentError(f"distcomm: {kind}: peer {peer} is not another "
                                       f"rank of this group of {self._n}")
        if self._queue is None:
            (self._send if kind == "send" else self._recv)(t, peer)
            return _done([t])
        fut = torch.futures.Future()
        self._queue.append((kind, t, peer, fut))
        return _create_work_from_future(fut)

    def _start_coalescing(self):
        if self._queue is not None:
            raise RuntimeError("distcomm: batch_isend_irecv calls cannot nest")
        self._queue = []

    def _end_coalescing(self, reqs=None):
        """Runs the queued send/recv: peer by peer in the order of the pair
        (min rank, max rank), the same on every rank, so each pair's turn
        comes on both sides together; in a pair the lower rank sends first."""
        queue, self._queue = self._queue or [], None
        peers = sorted({p for _, _, p, _ in queue},
                       key=lambda p: (min(p, self._r), max(p, self._r)))
        order = []
        for p in peers:
            mine = [q for q in queue if q[2] == p]
            first = "send" if self._r < p else "recv"
            order += [q for q in mine if q[0] == first] + [q for q in mine if q[0] != first]
        for i, (kind, t, peer, fut) in enumerate(order):
            try:
                (self._send if kind == "send" else self._recv)(t, peer)
            except Exception as e:
                for *_, f in order[i:]:
                    f.set_exception(e)
                raise
            fut.set_result([t])

    def barrier(self, opts=None):
        _c.barrier(self._g)
        return _done([])


# ---- creating groups -------------------------------------------------------

def _adopt_torchrun_rank(rank=None):
    """torchrun's RANK (or torch's rank) as MLX_RANK, when a hostfile is given
    but no MLX_RANK."""
    env = os.environ
    if "MLX_RANK" not in env and "MLX_HOSTFILE" in env:
        r = env.get("RANK", rank if rank is not None and rank >= 0 else None)
        if r is not None:
            env["MLX_RANK"] = str(r)


def _world(rank, size):
    _adopt_torchrun_rank(rank)
    g = _init(strict=size != 1)
    if (g.rank(), g.size()) != (rank, size):
        raise InvalidArgumentError(
            f"distcomm: torch says rank {rank} of {size}, but distcomm's "
            f"configuration (MLX_RANK, MLX_HOSTFILE) says rank {g.rank()} of {g.size()}")
    return g


_next_sub = []  # the split made by new_group for the creator to take


def _create(store, rank, size, timeout):
    """The creator registered with torch: the world, or new_group's split."""
    if _next_sub:
        return ProcessGroupDistcomm(_next_sub.pop(), timeout)
    if _c10d.GroupMember.WORLD is not None:
        raise RuntimeError("distcomm: a 'distcomm' subgroup must come from "
                           "torch.distributed.new_group after `import distcomm.torch`")
    return ProcessGroupDistcomm(_world(rank, size), timeout)


_torch_new_group = _c10d.new_group


def new_group(ranks=None, timeout=default_pg_timeout, backend=None, pg_options=None):
    """torch.distributed.new_group: every rank first takes part in the
    distcomm split the members' process group is made from."""
    world = _c10d.GroupMember.WORLD
    name = dist.Backend(backend) if backend else (
        _c10d.get_backend() if world is not None else None)
    if isinstance(world, ProcessGroupDistcomm) and name == BACKEND:
        members = sorted(range(world.size()) if ranks is None else ranks)
        if all(0 <= r < world.size() for r in members):  # else torch says why
            sub = world.group.split(0 if world.rank() in members else -1)
            if sub is not None:
                _next_sub.append(sub)
    elif name == BACKEND:
        raise NotSupportedError("distcomm: new_group(backend='distcomm') needs "
                                "init_process_group('distcomm')")
    try:
        return _torch_new_group(ranks, timeout, backend, pg_options)
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
    """A TCPStore served by rank 0 on a free port that distcomm broadcasts."""
    host = _rank0_host()
    port = torch.zeros(1, dtype=torch.int64)
    server = None
    if world.rank() == 0:
        server = dist.TCPStore(host, 0, world.size(), True, timeout,
                               wait_for_workers=False)
        port[0] = server.port
    _c.broadcast(world, port, _INT64, 0)
    return server or dist.TCPStore(host, int(port[0]), world.size(), False, timeout)


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
    if "MASTER_ADDR" not in os.environ and _launched_by_distcomm():
        return _distcomm_rendezvous(url, **kwargs)
    return _torch_env_rendezvous(url, **kwargs)


def _register():
    if BACKEND.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(BACKEND, _create)
    _rdzv.register_rendezvous_handler("distcomm", _distcomm_rendezvous)
    # torch offers no hook for the default init_method: env:// is replaced
    # by a handler that defers to torch's whenever MASTER_ADDR is set.
    _rdzv._rendezvous_handlers["env"] = _env_rendezvous
    dist.new_group = _c10d.new_group = new_group


_register()
