"""MLX's distributed tests (mlx_distributed_tests.py, ring_test_distributed.py)
re-expressed for numpy, plus the shapes, dtypes and out= of the numpy API."""
import array

import numpy as np
import pytest

import distcomm

SHAPES = [(7,), (10,), (1024,), (1024, 1024)]
# (dtype, relative tolerance; 0 means exact), MLX's table plus the rest of ours.
REDUCE_DTYPES = [
    (np.int8, 0), (np.uint8, 0), (np.int16, 0), (np.uint16, 0),
    (np.int32, 0), (np.uint32, 0), (np.int64, 0), (np.uint64, 0),
    (np.float32, 1e-6), (np.float16, 5e-3), (np.float64, 1e-12),
]


def to_bf16(x):
    """float32 -> bfloat16 bit patterns (uint16), rounding to nearest even."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def rank_data(world, rng, shape, dtype):
    """One array per rank, the same on every rank: x[r] is rank r's input."""
    return (rng.uniform(size=(world.size(),) + shape) * 10).astype(dtype)


def max_error(y, z, rtol):
    err = np.abs(y.astype(np.float64) - z.astype(np.float64))
    if rtol > 0:
        err /= np.abs(z.astype(np.float64))
    return err.max()


def test_groups(world):
    assert 0 <= world.rank() < world.size()
    again = distcomm.init()
    assert (again.rank(), again.size()) == (world.rank(), world.size())
    assert world.backend in ("ring", "mesh", "singleton", "mpi")
    assert distcomm.is_available()
    assert "rank" in repr(world)


@pytest.mark.parametrize("dtype,rtol", REDUCE_DTYPES, ids=lambda v: str(v))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_all_reduce(world, rng, dtype, rtol, shape):
    x = rank_data(world, rng, shape, dtype)
    y = distcomm.all_sum(x[world.rank()], group=world)
    assert y.dtype == x.dtype and y.shape == shape
    z = x.astype(np.float64).sum(0)  # the exact sum (no overflow of int8 here)
    assert max_error(y, z, rtol) <= rtol
    assert np.array_equal(distcomm.all_max(x[world.rank()], group=world), x.max(0))
    assert np.array_equal(distcomm.all_min(x[world.rank()], group=world), x.min(0))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_all_reduce_bfloat16(world, rng, shape):
    x = to_bf16(rank_data(world, rng, shape, np.float32))
    y = distcomm.all_sum(x[world.rank()], dtype="bfloat16")
    assert y.dtype == np.uint16 and y.shape == shape
    z = from_bf16(x).astype(np.float64).sum(0)
    assert max_error(from_bf16(y), z, 1e-1) <= 1e-1  # MLX's tolerance


def test_all_reduce_complex64_and_bool(world, rng):
    x = rank_data(world, rng, (10,), np.float32)
    c = (x + 1j * x).astype(np.complex64)
    y = distcomm.all_sum(c[world.rank()])
    assert y.dtype == np.complex64
    assert max_error(np.abs(y), np.abs(c.sum(0)), 1e-6) <= 1e-6
    b = np.zeros(4, bool)
    b[world.rank() % 4] = True
    assert np.array_equal(distcomm.all_sum(b), np.arange(4) < min(world.size(), 4))


def test_all_max_complex64_not_supported(world):
    with pytest.raises(distcomm.NotSupportedError):
        distcomm.all_max(np.ones(3, np.complex64))
    # refused before any communication: the world still works
    assert distcomm.all_sum(np.ones(1, np.int32))[0] == world.size()


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                   np.uint32, np.float32, np.float16, np.complex64, np.bool_])
def test_all_gather(world, dtype):
    x = np.ones((2, 2, 4), dtype=dtype)
    y = distcomm.all_gather(x)
    assert y.shape == (world.size() * 2, 2, 4) and y.dtype == x.dtype
    assert np.all(y == 1)


@pytest.mark.parametrize("size", [7, 1024, 1000003])
def test_all_gather_rank_data(world, size):
    base = np.arange(size, dtype=np.int32) % 100003
    y = distcomm.all_gather(base + world.rank())
    assert y.shape == (world.size() * size,)
    for r, region in enumerate(y.reshape(world.size(), size)):
        assert np.array_equal(region, base + r)


def test_all_gather_scalar(world):
    y = distcomm.all_gather(np.float32(world.rank()))
    assert y.shape == (world.size(),)
    assert np.array_equal(y, np.arange(world.size(), dtype=np.float32))
    s = distcomm.all_sum(np.float32(2))
    assert s.shape == () and s == 2 * world.size()


def test_sum_scatter(world):
    n = world.size()
    x = np.arange(n * 3 * 2, dtype=np.float32).reshape(n * 3, 2) + world.rank()
    y = distcomm.sum_scatter(x)
    total = sum(np.arange(n * 6, dtype=np.float32).reshape(n * 3, 2) + r for r in range(n))
    assert y.shape == (3, 2)
    assert np.array_equal(y, total[world.rank() * 3:(world.rank() + 1) * 3])


def test_sum_scatter_bad_shape_raises_before_communicating(world):
    before = world.collectives()
    if world.size() > 1:
        with pytest.raises(ValueError, match="split"):
            distcomm.sum_scatter(np.ones(world.size() * 2 + 1, np.float32))
    with pytest.raises(ValueError):
        distcomm.sum_scatter(np.float32(1))
    assert world.collectives() == before


SEND_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
               np.float32, np.float16, "bfloat16", np.complex64]


@pytest.mark.skipif(distcomm.init().size() < 2, reason="needs 2 ranks")
@pytest.mark.parametrize("dtype", SEND_DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_send_recv(world, rng, dtype, shape):
    """MLX's ring: even ranks send right then receive from the left, odd
    ranks the other way round, so that no one waits for itself."""
    bf16 = dtype == "bfloat16"
    x = rank_data(world, rng, shape, np.float32 if bf16 else dtype)
    x = to_bf16(x) if bf16 else x
    kw = {"dtype": "bfloat16"} if bf16 else {}
    rank, n = world.rank(), world.size()
    right, left = (rank + 1) % n, (rank + n - 1) % n
    if rank % 2 == 0:
        y = distcomm.send(x[rank], right, **kw)
        z = distcomm.recv_like(x[rank], left, **kw)
    else:
        z = distcomm.recv_like(x[rank], left, **kw)
        y = distcomm.send(x[rank], right, **kw)
    assert np.array_equal(y, x[rank])
    assert np.array_equal(z, x[left]) and z.dtype == x.dtype


@pytest.mark.skipif(distcomm.init().size() < 2, reason="needs 2 ranks")
def test_recv_shape_and_dtype(world):
    if world.rank() == 0:
        distcomm.send(np.arange(6, dtype=np.int64).reshape(2, 3), 1)
        distcomm.send(to_bf16(np.float32([1.5, -2.0])), 1, dtype="bfloat16")
    elif world.rank() == 1:
        z = distcomm.recv((2, 3), np.int64, 0)
        assert z.shape == (2, 3) and np.array_equal(z.ravel(), np.arange(6))
        b = distcomm.recv(2, "bfloat16", 0)
        assert b.dtype == np.uint16 and np.array_equal(from_bf16(b), [1.5, -2.0])


def test_out_avoids_the_allocation(world):
    x = np.ones((4, 3), np.float32)
    out = np.empty_like(x)
    assert distcomm.all_sum(x, out=out) is out
    assert np.all(out == world.size())
    assert distcomm.all_sum(x, out=x) is x  # in place
    assert np.all(x == world.size())
    g = np.empty((world.size() * 4, 3), np.float32)
    assert distcomm.all_gather(x, out=g) is g
    with pytest.raises(ValueError, match="out"):
        distcomm.all_sum(x, out=np.empty((3, 4), np.float32))
    with pytest.raises(ValueError, match="out"):
        distcomm.all_sum(x, out=np.empty((4, 3), np.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        distcomm.all_sum(x, out=np.empty((3, 4), np.float32).T)


def test_non_contiguous_and_foreign_buffers(world):
    n = world.size()
    x = np.arange(24, dtype=np.float64).reshape(4, 6)
    assert np.array_equal(distcomm.all_sum(x[:, ::2]), n * x[:, ::2])   # strided: copied
    assert np.array_equal(distcomm.all_sum(np.asfortranarray(x)), n * x)
    assert np.array_equal(distcomm.all_sum(array.array("f", [1, 2])), [n, 2 * n])
    assert np.array_equal(distcomm.all_sum(memoryview(bytearray(b"\x01\x02"))), [n, 2 * n])
    big_endian = np.arange(3, dtype=">i4")
    assert np.array_equal(distcomm.all_sum(big_endian), n * np.arange(3))


@pytest.mark.parametrize("bad", [np.array(["a"]), np.ones(2, np.complex128),
                                 np.array([object()]), np.ones(2, np.longdouble)],
                         ids=["str", "complex128", "object", "longdouble"])
def test_unsupported_dtype_raises_before_communicating(world, bad):
    before = world.collectives()
    with pytest.raises(TypeError, match="not supported"):
        distcomm.all_sum(bad)
    with pytest.raises(TypeError):
        distcomm.all_gather(bad)
    with pytest.raises(TypeError):
        distcomm.recv_like(bad, 0)
    assert world.collectives() == before


def test_bfloat16_needs_two_byte_storage(world):
    with pytest.raises(TypeError, match="uint16"):
        distcomm.all_sum(np.ones(3, np.float32), dtype="bfloat16")
    with pytest.raises(TypeError):
        distcomm.all_sum(np.ones(3, np.float32), dtype=np.float64)


def test_bad_group_argument():
    with pytest.raises(TypeError, match="Group"):
        distcomm.all_sum(np.ones(2), group="world")
