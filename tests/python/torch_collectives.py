"""torch.distributed on the "distcomm" backend, collective by collective,
against Gloo on the same inputs in the same job (a Gloo group made with
new_group over distcomm's store) and against the exact result computed
locally (Gloo lacks AVG, reduce_scatter and some dtypes on CPU).

Every test runs twice: as torch.distributed's functions use the backend
(blocking calls and small ops run on the calling thread), and with every op
a library request whose Work the completer thread completes, as DDP's
reducer gets them (inline_bytes -1 and every caller taken for torch's C++).

Run on every rank of a launched job (see CMakeLists.txt); the inputs are
small integers so that every dtype's result is exact in any order."""
import pytest

from torch_common import GLOO, RANK, SIZE, dist, torch  # skips without torch

import distcomm  # noqa: E402

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64]
OPS = {"SUM": dist.ReduceOp.SUM, "PRODUCT": dist.ReduceOp.PRODUCT,
       "MIN": dist.ReduceOp.MIN, "MAX": dist.ReduceOp.MAX, "AVG": dist.ReduceOp.AVG}


def data(rank, shape, dtype, low=0, high=4):
    """Rank rank's input: the same on every rank that computes it."""
    g = torch.Generator().manual_seed(1000 + rank)
    x = torch.randint(low, high, shape, generator=g)
    return x.bool() if dtype is torch.bool else x.to(dtype)


def exact(op, xs):
    """op over the ranks' tensors, computed here in float64/bool."""
    if xs[0].dtype is torch.bool:
        s = torch.stack(xs)
        return s.any(0) if op in ("SUM", "MAX") else s.all(0)
    s = torch.stack([x.to(torch.complex128 if x.is_complex() else torch.float64) for x in xs])
    if op == "SUM":
        return s.sum(0)
    if op == "AVG":
        return s.sum(0) / len(xs)
    if op == "PRODUCT":
        return s.prod(0)
    return s.amin(0) if op == "MIN" else s.amax(0)


def same(a, b):
    return torch.equal(a.to(b.dtype), b) if b.dtype is torch.bool else \
        torch.equal(a.to(b.dtype), b.to(a.dtype).to(b.dtype))


def on_gloo(fn, *args, **kw):
    """fn(*args) on the Gloo group; False where Gloo refuses the dtype on CPU."""
    try:
        fn(*args, group=GLOO, **kw)
        return True
    except RuntimeError as e:
        if "Invalid scalar type" in str(e):
            return False
        raise


@pytest.fixture(autouse=True, params=["inline", "background"])
def mode(request, monkeypatch):
    if request.param == "background":
        monkeypatch.setattr(distcomm.torch.ProcessGroupDistcomm, "inline_bytes", -1)
        monkeypatch.setattr(distcomm.torch, "_caller", lambda: "c++")
    return request.param


def test_the_backend_is_registered_and_sized():
    assert dist.get_backend() == "distcomm"
    assert isinstance(dist.group.WORLD, distcomm.torch.ProcessGroupDistcomm)
    assert dist.group.WORLD.name() == "distcomm"
    assert SIZE == distcomm.init().size() and RANK == distcomm.init().rank()


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_all_reduce(op, dtype):
    if op == "AVG" and not (dtype.is_floating_point or dtype.is_complex):
        with pytest.raises(distcomm.NotSupportedError, match="AVG"):
            dist.all_reduce(data(RANK, (5,), dtype), op=OPS[op])
        return
    if op in ("MIN", "MAX", "PRODUCT") and dtype.is_complex:
        with pytest.raises((RuntimeError, ValueError), match="complex"):  # torch refuses it itself
            dist.all_reduce(data(RANK, (5,), dtype), op=OPS[op])
        return
    low = 1 if op == "PRODUCT" else 0
    xs = [data(r, (33, 3), dtype, low, 3 if op == "PRODUCT" else 4) for r in range(SIZE)]
    t = xs[RANK].clone()
    dist.all_reduce(t, op=OPS[op])
    want = exact(op, xs)
    assert t.dtype == dtype and same(t, want), (t, want)
    if op != "AVG":  # Gloo has no AVG
        g = xs[RANK].clone()
        assert not on_gloo(dist.all_reduce, g, op=OPS[op]) or torch.equal(t, g)


def test_all_reduce_non_contiguous_in_place_and_async():
    base = data(RANK, (6, 8), torch.float32)
    t = base.t()  # not contiguous: copied, reduced, copied back
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    assert work.is_completed()
    want = exact("SUM", [data(r, (6, 8), torch.float32).t() for r in range(SIZE)])
    assert same(t, want) and same(base.t(), want)  # in base's own memory
    p = torch.nn.Parameter(torch.ones(4))  # requires grad: written all the same
    dist.all_reduce(p.data)
    assert torch.equal(p.data, torch.full((4,), float(SIZE)))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int64, torch.bfloat16, torch.complex64],
                         ids=str)
def test_broadcast_from_every_root(dtype):
    for root in range(SIZE):
        t = data(RANK, (17,), dtype)
        g = t.clone()
        dist.broadcast(t, root)
        assert torch.equal(t, data(root, (17,), dtype))
        assert not on_gloo(dist.broadcast, g, root) or torch.equal(t, g)


def test_broadcast_parameters_that_require_grad():
    p = torch.nn.Parameter(data(RANK, (3, 3), torch.float32))
    dist.broadcast(p, 0)
    assert torch.equal(p.detach(), data(0, (3, 3), torch.float32))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int8, torch.float16, torch.float64], ids=str)
def test_all_gather_and_base(dtype):
    x = data(RANK, (4, 5), dtype)
    outs = [torch.empty_like(x) for _ in range(SIZE)]
    gouts = [torch.empty_like(x) for _ in range(SIZE)]
    dist.all_gather(outs, x)
    gloo = on_gloo(dist.all_gather, gouts, x)
    for r in range(SIZE):
        assert torch.equal(outs[r], data(r, (4, 5), dtype))
        assert not gloo or torch.equal(outs[r], gouts[r])
    flat = torch.empty((SIZE * 4, 5), dtype=dtype)
    dist.all_gather_into_tensor(flat, x)  # _allgather_base
    assert torch.equal(flat, torch.cat(outs))


def test_all_gather_into_non_contiguous_outputs():
    x = data(RANK, (3, 4), torch.int32)
    outs = [torch.empty(4, 3, dtype=torch.int32).t() for _ in range(SIZE)]
    dist.all_gather(outs, x)
    assert all(torch.equal(outs[r], data(r, (3, 4), torch.int32)) for r in range(SIZE))


@pytest.mark.parametrize("op", ["SUM", "MAX", "AVG"])
def test_reduce_scatter_and_base(op):
    xs = [[data(r * SIZE + p, (6,), torch.float32) for p in range(SIZE)] for r in range(SIZE)]
    out = torch.empty(6)
    dist.reduce_scatter(out, xs[RANK], op=OPS[op])
    assert same(out, exact(op, [xs[r][RANK] for r in range(SIZE)]))
    base = torch.empty(6)
    dist.reduce_scatter_tensor(base, torch.cat(xs[RANK]), op=OPS[op])  # _reduce_scatter_base
    assert torch.equal(base, out)


def test_all_to_all_single_equal_and_uneven_splits():
    x = torch.arange(SIZE * 3, dtype=torch.float64) + 100 * RANK
    out, gout = torch.empty_like(x), torch.empty_like(x)
    dist.all_to_all_single(out, x)
    dist.all_to_all_single(gout, x, group=GLOO)
    assert torch.equal(out, gout)
    # rank r sends p + 1 rows to rank p (and r + 1 rows to itself)
    send = [p + 1 for p in range(SIZE)]
    recv = [RANK + 1] * SIZE
    x = torch.cat([torch.full((p + 1, 2), 10.0 * RANK + p) for p in range(SIZE)])
    out = torch.empty((sum(recv), 2))
    dist.all_to_all_single(out, x, recv, send)
    want = torch.cat([torch.full((RANK + 1, 2), 10.0 * r + RANK) for r in range(SIZE)])
    gout = torch.empty_like(out)
    dist.all_to_all_single(gout, x, recv, send, group=GLOO)
    assert torch.equal(out, want) and torch.equal(gout, want)


def test_all_to_all_lists():
    ins = [torch.full((p + 2,), RANK * 10 + p, dtype=torch.int64) for p in range(SIZE)]
    outs = [torch.empty(RANK + 2, dtype=torch.int64) for _ in range(SIZE)]
    dist.all_to_all(outs, ins)
    for r in range(SIZE):
        assert torch.equal(outs[r], torch.full((RANK + 2,), r * 10 + RANK, dtype=torch.int64))


def test_gather_scatter_reduce_from_every_root():
    for root in range(SIZE):
        x = data(RANK, (7,), torch.int32)
        outs = [torch.empty_like(x) for _ in range(SIZE)] if RANK == root else None
        gouts = [torch.empty_like(x) for _ in range(SIZE)] if RANK == root else None
        dist.gather(x, outs, dst=root)
        dist.gather(x, gouts, dst=root, group=GLOO)
        if RANK == root:
            assert all(torch.equal(outs[r], data(r, (7,), torch.int32)) for r in range(SIZE))
            assert all(torch.equal(o, g) for o, g in zip(outs, gouts))
        out, gout = torch.empty(7, dtype=torch.int32), torch.empty(7, dtype=torch.int32)
        ins = [data(root * 10 + p, (7,), torch.int32) for p in range(SIZE)]
        dist.scatter(out, ins if RANK == root else None, src=root)
        dist.scatter(gout, ins if RANK == root else None, src=root, group=GLOO)
        assert torch.equal(out, data(root * 10 + RANK, (7,), torch.int32))
        assert torch.equal(out, gout)
        t, g = x.clone(), x.clone()
        dist.reduce(t, root, op=dist.ReduceOp.MAX)
        dist.reduce(g, root, op=dist.ReduceOp.MAX, group=GLOO)
        if RANK == root:
            assert same(t, exact("MAX", [data(r, (7,), torch.int32) for r in range(SIZE)]))
            assert torch.equal(t, g)
        else:
            assert torch.equal(t, x)  # the others' tensors are left alone


def test_send_recv_round_the_ring_and_batched():
    if SIZE == 1:
        pytest.skip("needs 2 ranks")
    nxt, prv = (RANK + 1) % SIZE, (RANK - 1) % SIZE
    if RANK % 2 == 0:
        dist.send(torch.full((5,), float(RANK)), nxt)
        got = torch.empty(5)
        dist.recv(got, prv)
    else:
        got = torch.empty(5)
        dist.recv(got, prv)
        dist.send(torch.full((5,), float(RANK)), nxt)
    assert torch.equal(got, torch.full((5,), float(prv)))
    # both directions at once, 8 MiB each way: batch_isend_irecv orders them
    big = torch.full((2 << 20,), float(RANK))
    inbox = [torch.empty_like(big), torch.empty_like(big)]
    ops = [dist.P2POp(dist.isend, big, nxt), dist.P2POp(dist.irecv, inbox[0], prv),
           dist.P2POp(dist.isend, big, prv), dist.P2POp(dist.irecv, inbox[1], nxt)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    assert inbox[0][0] == prv and inbox[1][-1] == nxt


def test_coalesced_forms():
    ts = [data(RANK, (3,), torch.float32), data(RANK + 50, (2, 2), torch.float32)]
    dist.all_reduce_coalesced(ts)
    assert same(ts[0], exact("SUM", [data(r, (3,), torch.float32) for r in range(SIZE)]))
    assert same(ts[1], exact("SUM", [data(r + 50, (2, 2), torch.float32) for r in range(SIZE)]))
    ins = [torch.full((2,), RANK), torch.full((3,), 10 + RANK)]
    outs = [[torch.empty(2, dtype=torch.int64), torch.empty(3, dtype=torch.int64)]
            for _ in range(SIZE)]
    dist.all_gather_coalesced(outs, ins)
    assert all(outs[r][0][0] == r and outs[r][1][2] == 10 + r for r in range(SIZE))


def test_objects_barrier_and_subgroups():
    got = [None] * SIZE
    dist.all_gather_object(got, {"rank": RANK})
    assert got == [{"rank": r} for r in range(SIZE)]
    objs = [RANK * 7]
    dist.broadcast_object_list(objs, src=SIZE - 1)
    assert objs == [(SIZE - 1) * 7]
    dist.barrier()
    evens = dist.new_group([r for r in range(SIZE) if r % 2 == 0])
    if RANK % 2 == 0:
        assert evens.size() == (SIZE + 1) // 2 and evens.rank() == RANK // 2
        t = torch.ones(2)
        dist.all_reduce(t, group=evens)
        assert t[0] == evens.size()
    else:
        assert evens == dist.GroupMember.NON_GROUP_MEMBER
    dist.barrier()


def test_what_is_not_supported_says_so_before_communicating():
    with pytest.raises(distcomm.NotSupportedError, match="CPU tensors only"):
        dist.all_reduce(torch.empty(2, device="meta"))
    c = torch.full((2,), complex(RANK, 1), dtype=torch.complex128)
    if torch.__version__.startswith("1."):
        with pytest.raises(distcomm.NotSupportedError, match="complex128"):
            dist.broadcast(c, 0)
    else:  # torch 2 passes complex tensors to broadcast as float pairs
        dist.broadcast(c, 0)
        assert c.tolist() == [complex(0, 1)] * 2
    with pytest.raises(distcomm.NotSupportedError, match="BXOR"):
        dist.all_reduce(torch.zeros(2, dtype=torch.int32), op=dist.ReduceOp.BXOR)
    with pytest.raises(distcomm.NotSupportedError, match="any source"):
        dist.recv(torch.zeros(1))
    t = torch.ones(3)
    dist.all_reduce(t)  # the group is still in step on every rank
    assert t[0] == SIZE
