"""async_op=True (requests), all_to_all, gather, scatter and reduce."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import distcomm

needs2 = pytest.mark.skipif(distcomm.init().size() < 2, reason="needs 2 ranks")


def test_many_requests_equal_the_blocking_results(world, rng):
    n, r = world.size(), world.rank()
    xs = [rng.integers(-9, 9, size=(n, 1000 + i)).astype(np.float32) for i in range(8)]
    reqs = [distcomm.all_sum(x[r], async_op=True) for x in xs]
    reqs.append(distcomm.all_gather(np.arange(5) + r, async_op=True))
    reqs.append(distcomm.sum_scatter(np.ones(4 * n, np.int64), async_op=True))
    reqs.append(distcomm.all_max(xs[0][r], async_op=True))
    assert all(isinstance(q, distcomm.Request) for q in reqs)
    got = [q.wait() for q in reqs]
    for x, y in zip(xs, got):
        np.testing.assert_array_equal(y, x.sum(axis=0))
    np.testing.assert_array_equal(got[8], np.concatenate([np.arange(5) + q for q in range(n)]))
    np.testing.assert_array_equal(got[9], np.full(4, n))
    np.testing.assert_array_equal(got[10], xs[0].max(axis=0))
    assert all(q.is_completed() for q in reqs)
    np.testing.assert_array_equal(reqs[0].wait(), got[0])  # wait() again: same result


def test_wait_releases_the_gil(world):
    big = np.ones(4 << 20, np.float32)
    ticks = []
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=spin)
    t.start()
    req = distcomm.all_sum(big, async_op=True)
    while not req.is_completed():
        time.sleep(0.001)
    y = req.wait()
    stop.set()
    t.join()
    assert y[0] == world.size() and y[-1] == world.size()
    assert ticks


def test_all_to_all(world):
    n, r = world.size(), world.rank()
    x = np.arange(n * 3, dtype=np.int32) + 100 * r
    y = distcomm.all_to_all(x)
    want = np.concatenate([np.arange(3 * r, 3 * r + 3) + 100 * q for q in range(n)])
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(distcomm.all_to_all(x, async_op=True).wait(), want)
    if n > 1:  # checked before anything is sent
        with pytest.raises(ValueError):
            distcomm.all_to_all(np.ones(n * 3 + 1))


@pytest.mark.parametrize("root", [0, 1, 3])
def test_gather_scatter_reduce_every_root(world, root):
    n, r = world.size(), world.rank()
    root %= n
    x = np.full((2, 3), r, np.float64)
    g = distcomm.gather(x, root)
    if r == root:
        np.testing.assert_array_equal(g, np.repeat(np.arange(n, dtype=np.float64), 6).reshape(2 * n, 3))
    else:
        assert g is None
    src = np.arange(n * 4, dtype=np.int16).reshape(n * 2, 2) if r == root else None
    s = distcomm.scatter(src, (2, 2), np.int16, root, async_op=True).wait()
    np.testing.assert_array_equal(s, np.arange(4 * r, 4 * r + 4, dtype=np.int16).reshape(2, 2))
    red = distcomm.reduce(np.full(5, r + 1, np.int64), root)
    if r == root:
        np.testing.assert_array_equal(red, np.full(5, n * (n + 1) // 2))
    else:
        assert red is None
    m = distcomm.reduce(np.full(3, r, np.float32), root, "max", async_op=True).wait()
    if r == root:
        np.testing.assert_array_equal(m, np.full(3, n - 1, np.float32))


@needs2
def test_ctrl_c_interrupts_a_request_wait(world):
    sub = world.split(0)
    if world.rank() == 0:
        req = distcomm.recv(4, np.float32, 1, group=sub, async_op=True)  # never sent
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            req.wait()
        assert time.monotonic() - t0 < 1.3
        with pytest.raises(distcomm.InterruptedError):  # the group is poisoned
            distcomm.all_sum(np.ones(1), group=sub, async_op=True)
    distcomm.all_sum(np.ones(1))  # sub stays open on rank 1 meanwhile
    del sub
