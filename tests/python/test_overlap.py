"""distcomm.nn.average_gradients(overlap=True): the overlapped form gives
the blocking form's bits (same buckets, same all_sums), whatever order the
leaves are marked in, in place; bad marks raise and leave it usable.

Over 3+ ranks the default shared-memory path alternates between single
copy and the pipes call by call, whose float sums differ in the last bit
even between two blocking calls; there the bits are compared when the path
is pinned (python.overlap_cma_4 sets DISTCOMM_CMA=1), and closeness
otherwise."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import distcomm
from distcomm.nn import Overlapped, average_gradients

SIZES = [1, 777, 4099, 0, 33, 1024, 5, 70000, 129, 2, 999, 513, 64, 3000]


def grads(world):
    """Inexact, rank-dependent leaves of mixed dtypes (a fresh copy)."""
    r = world.rank()
    out = []
    for i, n in enumerate(SIZES):
        x = np.sin(0.37 * np.arange(n) + i) * (1.0 + 0.3131 * r) / 3.0
        dt = [np.float32, np.float64, np.float16, np.float32][i % 4]
        out.append(x.astype(dt))
    return out


def exact(world):
    return world.size() <= 2 or os.environ.get("DISTCOMM_CMA") in ("0", "1")


def same(a, b, world):
    if exact(world):
        return all(x.tobytes() == y.tobytes() for x, y in zip(a, b))
    return all(np.allclose(x, y, rtol=1e-3) for x, y in zip(a, b))


@pytest.mark.parametrize("size", [32 * 1024**2, 4096, 0])
@pytest.mark.parametrize("order", ["last_first", "first_first", "half"])
def test_overlap_matches_blocking(world, size, order):
    want = average_gradients(grads(world), all_reduce_size=size)
    g = grads(world)
    before = world.collectives()
    avg = average_gradients(g, all_reduce_size=size, overlap=True)
    assert isinstance(avg, Overlapped)
    idx = list(range(len(g)))
    if order == "last_first":
        idx.reverse()
    if order == "half":
        idx = idx[::-1][: len(idx) // 2]
    for i in idx:
        avg.ready(i)
    got = avg.wait()
    assert got is g  # in place
    assert same(want, g, world)
    if world.size() > 1:
        b0 = world.collectives()
        average_gradients(grads(world), all_reduce_size=size)
        assert world.collectives() - b0 == b0 - before


def test_overlap_tree_in_place(world):
    tree = {"w": np.full(5, float(world.rank()), np.float32),
            "b": [np.full(3, 2.0 * world.rank())]}
    w, b = tree["w"], tree["b"][0]
    avg = average_gradients(tree, overlap=True)
    avg.ready(1)  # tree order: "w" then "b"[0]
    avg.ready(0)
    assert avg.wait() is tree
    m = (world.size() - 1) / 2.0
    assert np.all(w == np.float32(m)) and np.all(b == 2.0 * m)


def test_overlap_bad_marks(world):
    g = [np.ones(4, np.float32), np.ones(2, np.float32)]
    avg = average_gradients(g, all_reduce_size=0, overlap=True)
    with pytest.raises(IndexError, match="ready\\(2\\)"):
        avg.ready(2)
    avg.ready(1)
    with pytest.raises(distcomm.InvalidArgumentError, match="already"):
        avg.ready(1)
    avg.wait()  # leaf 0, never marked, is taken as ready here
    assert np.all(g[0] == 1) and np.all(g[1] == 1)
    with pytest.raises(RuntimeError, match="twice"):
        avg.wait()
    with pytest.raises(RuntimeError, match="after wait"):
        avg.ready(0)


def test_overlap_needs_writable_arrays(world):
    ro = np.ones(3, np.float32)
    ro.flags.writeable = False
    for bad in ([ro], [[1.0, 2.0]], [np.ones((4, 4), np.float32)[:, 1]]):
        with pytest.raises(TypeError, match="in place|native"):
            average_gradients(bad, overlap=True)


def test_overlap_killed_peer_fails_the_wait(world, tmp_path):
    """A job of two started by hand (the launcher would stop the survivor):
    rank 1 is killed while rank 0's buckets wait on it."""
    if world.rank() != 0:
        pytest.skip("runs its own job, once per launch")
    from test_errors import clean_env, free_ports
    hostfile = tmp_path / "hosts.json"
    hostfile.write_text("[%s]" % ", ".join(f'["127.0.0.1:{p}"]' for p in free_ports(2)))
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "overlap_peer_worker.py")
    procs = [subprocess.Popen([sys.executable, worker], stdout=subprocess.PIPE, text=True,
                              env=clean_env(MLX_RANK=str(r), MLX_HOSTFILE=str(hostfile),
                                            DISTCOMM_TIMEOUT="20"))
             for r in range(2)]
    try:
        assert procs[1].stdout.readline().strip() == "ready"
        assert procs[0].stdout.readline().strip() == "ready"
        time.sleep(0.2)  # rank 0 is now waiting on its buckets
        procs[1].kill()
        t0 = time.monotonic()
        line = procs[0].stdout.readline().strip()
        elapsed = time.monotonic() - t0
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert line.startswith("PeerLostError ERR_PEER_LOST"), line
    assert "rank 1" in line
    assert elapsed < 5.0
