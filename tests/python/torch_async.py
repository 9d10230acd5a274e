"""async_op=True on the "distcomm" backend: collectives run in the
background as library requests. Several are outstanding at once, then
waited for (in reverse order), and their results equal Gloo's on the same
inputs; a call returns before the peers have even joined the op."""
import threading
import time

import pytest

from torch_common import GLOO, RANK, SIZE, dist, torch  # skips without torch

import distcomm.torch  # noqa: E402

N = 1 << 16  # float32 elements: 256 KiB, above the default inline_bytes


def inputs(seed, n=N):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-8, 8, (n,), generator=g).float()


def test_outstanding_collectives_then_wait_match_gloo():
    assert N * 4 > distcomm.torch.ProcessGroupDistcomm.inline_bytes
    ar1, ar2 = inputs(RANK), inputs(RANK + 100)
    gathered = torch.empty(SIZE * N)
    bc = inputs(RANK + 200)
    rs_out = torch.empty(N)
    rs_in = inputs(RANK + 300, SIZE * N)
    # all_to_all_single with uneven splits: rank r sends (p + 1) * N rows to p
    a2a_in = torch.cat([torch.full(((p + 1) * 1024,), 10.0 * RANK + p) for p in range(SIZE)])
    a2a_out = torch.empty((RANK + 1) * 1024 * SIZE)
    a2a_args = ([(RANK + 1) * 1024] * SIZE, [(p + 1) * 1024 for p in range(SIZE)])
    red = inputs(RANK + 400)
    g_outs = [torch.empty(N) for _ in range(SIZE)] if RANK == 0 else None
    sc_out = torch.empty(N)
    sc_in = [inputs(500 + p) for p in range(SIZE)] if RANK == SIZE - 1 else None
    keep = [t.clone() for t in (ar1, ar2, bc, red)]
    works = [dist.all_reduce(ar1, async_op=True),
             dist.all_gather_into_tensor(gathered, inputs(RANK + 600), async_op=True),
             dist.all_reduce(ar2, op=dist.ReduceOp.MAX, async_op=True),
             dist.broadcast(bc, SIZE - 1, async_op=True),
             dist.reduce_scatter_tensor(rs_out, rs_in, async_op=True),
             dist.all_to_all_single(a2a_out, a2a_in, *a2a_args, async_op=True),
             dist.reduce(red, 0, async_op=True),
             dist.gather(inputs(RANK + 700), g_outs, dst=0, async_op=True),
             dist.scatter(sc_out, sc_in, src=SIZE - 1, async_op=True)]
    # the same on Gloo, blocking, from the inputs kept aside
    g_ar1, g_ar2, g_bc, g_red = keep
    dist.all_reduce(g_ar1, group=GLOO)
    dist.all_reduce(g_ar2, op=dist.ReduceOp.MAX, group=GLOO)
    dist.broadcast(g_bc, SIZE - 1, group=GLOO)
    g_gathered = [torch.empty(N) for _ in range(SIZE)]
    dist.all_gather(g_gathered, inputs(RANK + 600), group=GLOO)
    g_a2a = torch.empty_like(a2a_out)
    dist.all_to_all_single(g_a2a, a2a_in, *a2a_args, group=GLOO)
    dist.reduce(g_red, 0, group=GLOO)
    gg_outs = [torch.empty(N) for _ in range(SIZE)] if RANK == 0 else None
    dist.gather(inputs(RANK + 700), gg_outs, dst=0, group=GLOO)
    g_sc = torch.empty(N)
    dist.scatter(g_sc, sc_in, src=SIZE - 1, group=GLOO)
    for w in reversed(works):
        assert w.wait()
        assert w.is_completed()
    assert torch.equal(ar1, g_ar1) and torch.equal(ar2, g_ar2) and torch.equal(bc, g_bc)
    assert torch.equal(gathered, torch.cat(g_gathered))
    want_rs = sum(inputs(r + 300, SIZE * N) for r in range(SIZE)).chunk(SIZE)[RANK]
    assert torch.equal(rs_out, want_rs)
    assert torch.equal(a2a_out, g_a2a)
    # the root's sum (Gloo uses the others' tensors as scratch; ours are left alone)
    assert torch.equal(red, g_red if RANK == 0 else inputs(RANK + 400))
    if RANK == 0:
        assert all(torch.equal(a, b) for a, b in zip(g_outs, gg_outs))
    assert torch.equal(sc_out, g_sc)


def test_async_returns_before_the_peers_join():
    """Rank 0 starts an all_reduce while the others are still asleep: the
    call returns at once with the Work not complete, rank 0 computes, and
    wait() then gives the sum. The future completes on the completer
    thread, not the caller's."""
    if SIZE == 1:
        pytest.skip("needs 2 ranks")
    dist.barrier()
    t = torch.full((N,), float(RANK + 1))
    if RANK != 0:
        time.sleep(0.5)
    t0 = time.monotonic()
    work = dist.all_reduce(t, async_op=True)
    issued = time.monotonic() - t0
    if RANK == 0:
        assert issued < 0.25, issued
        assert not work.is_completed()
        names = []
        seen = work.get_future().then(lambda f: names.append(threading.current_thread().name))
        torch.randn(256, 256) @ torch.randn(256, 256)  # overlaps the all_reduce
    work.wait()
    assert torch.equal(t, torch.full((N,), float(SIZE * (SIZE + 1) // 2)))
    if RANK == 0:
        # The callback runs after its future completes, which is what
        # wait() waited for: wait for the callback's own future too.
        seen.wait()
        assert names == ["distcomm.torch completer"]


def test_a_blocking_call_after_async_ones_keeps_order():
    """A blocking op issued behind outstanding requests runs after them."""
    ts = [torch.full((N,), float(RANK + k)) for k in range(3)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    small = torch.ones(1)
    dist.all_reduce(small)  # inline: waits for the three first
    assert small[0] == SIZE
    for k, (t, w) in enumerate(zip(ts, works)):
        w.wait()
        assert t[0] == sum(r + k for r in range(SIZE))


def test_all_to_allv_blocks_past_the_buffer_are_refused_before_communicating():
    from distcomm import _distcomm as _c
    g = dist.group.WORLD.group
    code = _c.DTYPES["float32"][0]
    x, y = torch.zeros(4 * SIZE), torch.zeros(4 * SIZE)
    with pytest.raises(ValueError, match="send block 0 .* goes past the buffer"):
        _c.start_v(g, x, [4 * SIZE + 1] + [0] * (SIZE - 1), [0] * SIZE, y, [0] * SIZE,
                   [0] * SIZE, code, None)
    with pytest.raises(ValueError, match=f"{SIZE + 1} recv counts for a group of {SIZE}"):
        _c.start_v(g, x, [0] * SIZE, [0] * SIZE, y, [0] * (SIZE + 1), [0] * SIZE, code, None)
    t = torch.ones(2)
    dist.all_reduce(t)  # still in step
    assert t[0] == SIZE
