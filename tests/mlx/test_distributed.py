"""Real MLX on distcomm: every rank of `distcomm-launch --mlx -n N` runs
this file. MLX's own mpi backend loads libdistcomm-ompi.so (MLX_MPI_LIBNAME)
and each mx.distributed call below goes through it to distcomm. The cases
re-express those of MLX's python/tests/mlx_distributed_tests.py and
mpi_test_distributed.py; every rank runs them in the same order.
MLX_DIST_QUICK=1 runs a subset (the 8-rank run)."""

import os

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest
from mlx.nn.layers.distributed import shard_linear
from mlx.utils import tree_flatten

SIZE = int(os.environ.get("MLX_WORLD_SIZE", "1"))
QUICK = os.environ.get("MLX_DIST_QUICK") == "1"
slow = pytest.mark.skipif(QUICK, reason="MLX_DIST_QUICK=1: the quick subset")

if SIZE > 1:
    WORLD = mx.distributed.init(strict=True, backend="mpi")
else:
    WORLD = mx.distributed.init()  # a world of one: MLX's own singleton

INTS = [mx.int8, mx.uint8, mx.int16, mx.uint16, mx.int32, mx.uint32,
        mx.int64, mx.uint64]
FLOATS = [(mx.float16, 1e-2), (mx.bfloat16, 2e-2), (mx.float32, 1e-5),
          (mx.float64, 1e-12), (mx.complex64, 1e-5)]


def groups():
    """The world and a split of it into odd and even ranks (MLX's world of
    one cannot split)."""
    return [WORLD] if SIZE == 1 else [WORLD, WORLD.split(WORLD.rank() % 2)]


def data(g, shape, dtype, seed=0):
    """(g.size(), *shape) values, the same on every rank of g."""
    x = mx.random.uniform(shape=(g.size(),) + shape, key=mx.random.key(seed))
    if dtype == mx.complex64:
        y = mx.random.uniform(shape=x.shape, key=mx.random.key(seed + 1))
        return (x * 10 + 1j * (y * 10 - 5)).astype(dtype)
    if dtype in INTS:
        return (x * 100).astype(dtype)
    return (x * 10 - 5).astype(dtype)


def test_the_face_is_loaded():
    assert WORLD.size() == SIZE
    assert 0 <= WORLD.rank() < SIZE
    assert os.environ["MLX_MPI_LIBNAME"].endswith("libdistcomm-ompi.so")
    assert "MLX_RANK" not in os.environ and "MLX_HOSTFILE" not in os.environ
    again = mx.distributed.init()  # MLX's "any": ring absent, so mpi
    assert (again.size(), again.rank()) == (WORLD.size(), WORLD.rank())


@pytest.mark.skipif(SIZE > 1, reason="one rank only")
def test_one_rank_is_refused_by_strict_mpi():
    # Open MPI's rule, which MLX applies: a world of one is no mpi group.
    with pytest.raises(RuntimeError, match="single process"):
        mx.distributed.init(strict=True, backend="mpi")


@pytest.mark.parametrize("dt", INTS)
def test_all_reduce_ints(dt):
    for g in groups():
        for shape in [(7,), (1024,)] + ([] if QUICK else [(129, 33)]):
            x = data(g, shape, dt)
            mine = x[g.rank()]
            wide = np.array(x.astype(mx.int64) if dt != mx.uint64 else x)
            want = wide.sum(0).astype(np.array(mine).dtype)  # wraps as MLX
            assert np.array_equal(np.array(mx.distributed.all_sum(mine, group=g)), want)
            assert mx.array_equal(mx.distributed.all_max(mine, group=g), x.max(0))
            assert mx.array_equal(mx.distributed.all_min(mine, group=g), x.min(0))


@pytest.mark.parametrize("dt,rtol", FLOATS)
def test_all_reduce_floats(dt, rtol):
    for g in groups():
        for shape in [(7,), (1024,)] + ([] if QUICK else [(257, 65)]):
            x = data(g, shape, dt)
            mine = x[g.rank()]
            got = mx.distributed.all_sum(mine, group=g)
            assert got.dtype == dt
            want = x.astype(mx.complex64 if dt == mx.complex64 else mx.float64).sum(0)
            err = (got.astype(want.dtype) - want).abs().max().item()
            assert err <= rtol * max(1.0, want.abs().max().item()), (dt, err)
            if dt == mx.complex64:  # MLX orders complex by real, then imag
                xs = np.array(x)
                order = np.lexsort((xs.imag, xs.real), axis=0)
                top = np.take_along_axis(xs, order[-1:], 0)[0]
                low = np.take_along_axis(xs, order[:1], 0)[0]
                assert np.array_equal(np.array(mx.distributed.all_max(mine, group=g)), top)
                assert np.array_equal(np.array(mx.distributed.all_min(mine, group=g)), low)
                continue
            assert mx.array_equal(mx.distributed.all_max(mine, group=g), x.max(0))
            assert mx.array_equal(mx.distributed.all_min(mine, group=g), x.min(0))


def test_all_reduce_in_place_and_bool():
    x = mx.arange(10) * (WORLD.rank() + 1)
    want = mx.arange(10) * (SIZE * (SIZE + 1) // 2)
    assert mx.array_equal(mx.distributed.all_sum(x), want)
    flags = mx.array([WORLD.rank() == 0, False, True])
    assert mx.distributed.all_sum(flags).tolist() == [True, False, True]


def test_16_bit_max_min_keep_their_format():
    # Max and min pick the same bits in float16 and bfloat16 except where
    # float16 has NaNs and bfloat16 big numbers: the face must tell MLX's
    # two ops apart (it once ran bfloat16's max as float16's).
    r = WORLD.rank()
    big = mx.array([3e38, -3e38, 1e37 * (r + 1), 2.0 ** (100 + r)], mx.bfloat16)
    want = [mx.array([3e38, -3e38, 1e37 * (q + 1), 2.0 ** (100 + q)], mx.bfloat16)
            for q in range(SIZE)]
    assert mx.array_equal(mx.distributed.all_max(big),
                          mx.stack(want).max(0)).item()
    assert mx.array_equal(mx.distributed.all_min(big),
                          mx.stack(want).min(0)).item()
    h = mx.array([1.0, -2.0, 2048.0 + 2 * r], mx.float16)
    assert mx.distributed.all_max(h).tolist() == [1.0, -2.0, 2048.0 + 2 * (SIZE - 1)]


@pytest.mark.parametrize("dt", [mx.bool_] + INTS + [d for d, _ in FLOATS])
def test_all_gather(dt):
    for g in groups():
        x = data(g, (2, 3, 4), dt)
        y = mx.distributed.all_gather(x[g.rank()], group=g)
        assert y.shape == (g.size() * 2, 3, 4)
        assert mx.array_equal(y, x.reshape(g.size() * 2, 3, 4))


def test_sum_scatter_is_refused_by_mlx_mpi():
    # MLX's mpi backend raises for sum_scatter before it reaches us; the
    # world of one (MLX's singleton) has it as an identity.
    x = mx.ones((SIZE * 4,))
    if SIZE == 1:
        assert mx.array_equal(mx.distributed.sum_scatter(x), x)
        return
    with pytest.raises(RuntimeError, match="sum_scatter"):
        mx.eval(mx.distributed.sum_scatter(x))
    assert mx.distributed.all_sum(mx.ones(2)).tolist() == [SIZE] * 2  # still fine


@pytest.mark.skipif(SIZE < 2, reason="needs ranks to split")
def test_split_colors_and_keys():
    r = WORLD.rank()
    rev = WORLD.split(0, SIZE - r)  # one group, ranks reversed by key
    assert (rev.size(), rev.rank()) == (SIZE, SIZE - 1 - r)
    g = mx.distributed.all_gather(mx.array([r]), group=rev)
    assert g.tolist() == list(range(SIZE - 1, -1, -1))
    halves = WORLD.split(r % 2)
    assert halves.size() == (SIZE + 1 - r % 2) // 2
    assert halves.rank() == r // 2
    # MLX's test_mixed: sums in one split, gathered over the other.
    if SIZE % 2 == 0:
        pairs, evens = WORLD.split(r // 2), WORLD.split(r % 2)
        y = mx.distributed.all_sum(mx.ones((1, 8)) * r, group=pairs)
        z = mx.distributed.all_gather(y, group=evens)
        want = mx.arange(SIZE).reshape(SIZE // 2, 2).sum(-1, keepdims=True)
        assert mx.all(z == want).item()
    nested = halves.split(0)  # a split of a split
    assert mx.distributed.all_sum(mx.array([1]), group=nested).item() == halves.size()


@pytest.mark.skipif(SIZE < 2, reason="needs two ranks")
def test_send_recv_between_any_two():
    r = WORLD.rank()
    pairs = [(a, b) for a in range(SIZE) for b in range(SIZE) if a != b]
    if QUICK:
        pairs = pairs[:: max(1, len(pairs) // 6)]
    for src, dst in pairs:
        x = mx.arange(5, dtype=mx.float16) + 10 * src + dst
        if r == src:
            mx.eval(mx.distributed.send(x, dst))
        elif r == dst:
            got = mx.distributed.recv_like(x, src)
            assert mx.array_equal(got, x), (src, dst)


@pytest.mark.skipif(SIZE < 2, reason="needs two ranks")
def test_send_recv_ping_pong_in_pairs():
    # MLX's test_send_recv: doubling a value passed back and forth.
    if SIZE % 2:
        pytest.skip("pairs need an even size")
    pairs = WORLD.split(WORLD.rank() // 2)
    other = (pairs.rank() + 1) % 2
    sending = pairs.rank() == 0
    x = mx.ones(10)
    for _ in range(10):
        if sending:
            mx.eval(mx.distributed.send(2 * x, other, group=pairs))
        else:
            x = mx.distributed.recv_like(x, other, group=pairs)
            mx.eval(x)
        sending = not sending
    assert mx.all(x == (1024 if pairs.rank() == 0 else 512)).item()
    # a recv and unrelated work in one eval
    y = mx.ones((5, 5)) + 2
    z = (mx.distributed.send(2 * x, other, group=pairs) if sending
         else mx.distributed.recv_like(x, other, group=pairs))
    mx.eval(y, z)


@slow
def test_large_arrays():
    n = 8 * 1024 * 1024  # 32 MiB of float32
    x = mx.full((n,), WORLD.rank() + 1.0)
    y = mx.distributed.all_sum(x)
    assert mx.all(y == SIZE * (SIZE + 1) / 2).item()
    h = mx.distributed.all_max(mx.full((n,), float(WORLD.rank()), mx.bfloat16))
    assert mx.all(h == SIZE - 1).item()
    g = mx.distributed.all_gather(mx.full((n // SIZE,), WORLD.rank(), mx.int32))
    assert mx.array_equal(g, mx.repeat(mx.arange(SIZE, dtype=mx.int32), n // SIZE))


def test_average_gradients():
    def tree(c):
        return {"w": mx.ones((4, 8)) * c,
                "b": [mx.arange(3, dtype=mx.float16) * c,
                      mx.full((1000,), c, mx.bfloat16)]}

    grads, want = tree(float(WORLD.rank())), tree((SIZE - 1) / 2)
    for size in [0, 64, 32 * 1024 * 1024]:  # per tensor, small buckets, one
        avg = nn.average_gradients(grads, all_reduce_size=size)
        for (_, got), (_, w) in zip(tree_flatten(avg), tree_flatten(want)):
            assert got.dtype == w.dtype
            assert mx.array_equal(got, w).item(), (size, got, w)


def test_sharded_linear_layers_equal_the_whole():
    mx.random.seed(7)  # the same weights on every rank
    full = nn.Sequential(nn.Linear(32, 64), nn.Linear(64, 16))
    x = mx.random.normal((3, 32), key=mx.random.key(3))
    want = full(x)
    part = nn.Sequential(
        shard_linear(full.layers[0], "all-to-sharded", group=WORLD),
        shard_linear(full.layers[1], "sharded-to-all", group=WORLD),
    )
    got = part(x)
    assert got.shape == want.shape
    assert mx.allclose(got, want, atol=1e-5).item()
    # the first alone: each rank holds its slice of the outputs
    mid = part.layers[0](x)
    assert mid.shape == (3, 64 // SIZE)
    whole = mx.distributed.all_gather(mid.T).T
    assert mx.allclose(whole, full.layers[0](x), atol=1e-5).item()


def test_gradients_of_a_sharded_layer():
    # training through the shards: sharded-to-all's backward is an all_sum
    mx.random.seed(11)
    full = nn.Sequential(nn.Linear(16, 32), nn.Linear(32, 4))
    x = mx.random.normal((5, 16), key=mx.random.key(5))
    part = nn.Sequential(
        shard_linear(full.layers[0], "all-to-sharded", group=WORLD),
        shard_linear(full.layers[1], "sharded-to-all", group=WORLD),
    )

    def loss(m):
        return (m(x) ** 2).sum()

    want = nn.value_and_grad(full, loss)(full)[0]
    got = nn.value_and_grad(part, loss)(part)[0]
    assert mx.allclose(got, want, rtol=1e-4).item()


def test_after_everything_the_world_still_agrees():
    v = mx.distributed.all_sum(mx.array([1.0]))
    assert v.item() == SIZE
