"""distcomm.nn.average_gradients(overlap=True): the overlapped form gives
the blocking form's bits (same buckets, same all_sums), whatever order the
leaves are marked in, in place; bad marks raise and leave it usable.

Over 3+ ranks the default shared-memory path alternates between single
copy and the pipes call by call, whose float sums differ in the last bit
even between two blocking calls; there the bits are compared when the path
is pinned (python.overlap_cma_4 sets DISTCOMM_CMA=1), and closeness
otherwise."""
import os

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
