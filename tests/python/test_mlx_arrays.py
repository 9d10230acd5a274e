"""distcomm.* on mx.array: every op takes MLX arrays (read in place through
DLPack, lazy ones evaluated by the export) and gives mx.array results of
the input's dtype, bfloat16 included; an mx.Dtype makes recv and scatter
give mx.array. Skipped where mlx is not importable (Debian's python3); the
ctest python.mlx_arrays_N runs it with <build>/venv-mlx's python."""
import os
import subprocess
import sys

import numpy as np
import pytest

import distcomm

mx = pytest.importorskip("mlx.core", reason="mlx is not installed (pip install 'mlx[cpu]')")

WORLD = distcomm.init()
N, R = WORLD.size(), WORLD.rank()
needs2 = pytest.mark.skipif(N < 2, reason="needs 2 ranks")

# Every dtype MLX's all_sum takes, and the ones max/min take (not complex).
DTYPES = [mx.bool_, mx.int8, mx.int16, mx.int32, mx.int64, mx.uint8, mx.uint16,
          mx.uint32, mx.uint64, mx.float16, mx.bfloat16, mx.float32, mx.float64,
          mx.complex64]
ORDERED = [t for t in DTYPES if t not in (mx.bool_, mx.complex64)]


def ranked(rank, dtype, shape=(3, 5)):
    """Rank-dependent values every rank can recompute: small, so exact in
    every dtype (float16/bfloat16 included) when summed over 8 ranks."""
    x = (mx.arange(int(np.prod(shape))).reshape(shape) % 7) + rank
    if dtype == mx.bool_:
        return (x % 2) == 0
    return x.astype(dtype)


def same(y, want):
    """y is an mx.array equal to want, with want's dtype and shape."""
    assert isinstance(y, mx.array), type(y)
    assert y.dtype == want.dtype and y.shape == want.shape, (y.dtype, y.shape, want.dtype)
    assert mx.array_equal(y, want).item(), (y, want)


def fold(op, dtype, shape=(3, 5)):
    """op over every rank's ranked() array, computed here in MLX."""
    parts = [ranked(q, dtype, shape) for q in range(N)]
    if dtype == mx.bool_:  # MLX's all_sum on bool is a logical or
        acc = parts[0]
        for p in parts[1:]:
            acc = acc | p if op == "sum" else (acc & p if op == "min" else acc | p)
        return acc
    acc = parts[0]
    for p in parts[1:]:
        acc = {"sum": mx.add, "max": mx.maximum, "min": mx.minimum}[op](acc, p)
    return acc.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_all_sum_every_dtype(dtype):
    same(distcomm.all_sum(ranked(R, dtype)), fold("sum", dtype))


@pytest.mark.parametrize("dtype", ORDERED, ids=str)
def test_all_max_and_min(dtype):
    same(distcomm.all_max(ranked(R, dtype)), fold("max", dtype))
    same(distcomm.all_min(ranked(R, dtype)), fold("min", dtype))


@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16, mx.float16, mx.complex64], ids=str)
def test_gather_scatter_family(dtype):
    x = ranked(R, dtype, (2, 3))
    everyone = mx.concatenate([ranked(q, dtype, (2, 3)) for q in range(N)])
    same(distcomm.all_gather(x), everyone)
    same(distcomm.sum_scatter(mx.concatenate([x] * N)), fold("sum", dtype, (2, 3)))
    g = distcomm.gather(x, root=N - 1)
    if R == N - 1:
        same(g, everyone)
    else:
        assert g is None
    part = distcomm.scatter(everyone if R == 0 else None, (2, 3), dtype, root=0)
    same(part, ranked(R, dtype, (2, 3)))
    # all_to_all: block q of rank r's input is r*N+q; rank r gets q*N+r from q
    blocks = mx.arange(N * 4).reshape(N, 4).astype(dtype) + R * N * 4
    want = mx.stack([mx.arange(4) + q * N * 4 + R * 4 for q in range(N)]).astype(dtype)
    same(distcomm.all_to_all(blocks), want)


@pytest.mark.parametrize("dtype", [mx.int32, mx.bfloat16, mx.complex64], ids=str)
def test_broadcast_from_every_root(dtype):
    for root in range(N):
        same(distcomm.broadcast(ranked(R, dtype), root=root), ranked(root, dtype))
    distcomm.barrier()


@needs2
@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16, mx.float16], ids=str)
def test_send_recv_and_recv_like_around_the_ring(dtype):
    right, left = (R + 1) % N, (R - 1) % N
    x = ranked(R, dtype)
    if R % 2 == 0:  # evens send first, so the ring cannot wait on itself
        assert distcomm.send(x, right) is x  # MLX returns the sent array
        got = distcomm.recv(x.shape, dtype, left)
    else:
        got = distcomm.recv_like(x, left)
        distcomm.send(x, right)
    same(got, ranked(left, dtype))


def test_requests_give_mx_arrays():
    x = ranked(R, mx.bfloat16)
    reqs = [distcomm.all_sum(x, async_op=True), distcomm.all_gather(x, async_op=True),
            distcomm.all_max(x, async_op=True),
            distcomm.sum_scatter(mx.concatenate([x] * N), async_op=True),
            distcomm.broadcast(x, root=0, async_op=True),
            distcomm.all_to_all(mx.concatenate([x] * N), async_op=True)]
    assert all(isinstance(q, distcomm.Request) for q in reqs)
    got = [q.wait() for q in reqs]
    same(got[0], fold("sum", mx.bfloat16))
    same(got[1], mx.concatenate([ranked(q, mx.bfloat16) for q in range(N)]))
    same(got[2], fold("max", mx.bfloat16))
    same(got[3], fold("sum", mx.bfloat16))
    same(got[4], ranked(0, mx.bfloat16))
    same(got[5], mx.concatenate([ranked(q, mx.bfloat16) for q in range(N)]))
    assert reqs[0].wait() is got[0]  # converted once, then kept
    if N > 1:
        right, left = (R + 1) % N, (R - 1) % N
        s = distcomm.send(x, right, async_op=True)
        r = distcomm.recv(x.shape, mx.bfloat16, left, async_op=True)
        assert s.wait() is x
        same(r.wait(), ranked(left, mx.bfloat16))


def test_lazy_and_transposed_inputs():
    lazy = mx.ones((64, 32)) * (R + 1)  # not evaluated yet
    same(distcomm.all_sum(lazy), mx.full((64, 32), N * (N + 1) / 2))
    t = mx.arange(12).reshape(3, 4).T  # strided through DLPack: copied
    same(distcomm.all_sum(t), t * N)


def test_large_array():
    x = mx.full((1 << 22,), R + 1, dtype=mx.float32)  # 16 MiB
    same(distcomm.all_sum(x), mx.full((1 << 22,), N * (N + 1) / 2, dtype=mx.float32))


def test_numpy_stays_numpy():
    y = distcomm.all_sum(np.ones(3, np.float32))
    assert type(y) is np.ndarray and np.array_equal(y, np.full(3, N, np.float32))


def test_out_mx_array_is_refused_before_any_communication():
    with pytest.raises(TypeError, match="out cannot be an mx.array"):
        distcomm.all_sum(mx.ones(3), out=mx.zeros(3))
    out = np.zeros(3, np.float32)  # a numpy out= is written and returned
    assert distcomm.all_sum(mx.ones(3), out=out) is out and np.all(out == N)


def test_split_group_takes_mx_arrays():
    sub = WORLD.split(R % 2)
    members = [q for q in range(N) if q % 2 == R % 2]
    same(distcomm.all_sum(mx.array([R]), group=sub), mx.array([sum(members)]))


def test_distcomm_does_not_import_mlx():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DISTCOMM_", "MLX_", "OMPI_", "PMI"))}
    code = ("import sys, numpy, distcomm; distcomm.all_sum(numpy.ones(2)); "
            "distcomm.recv_like; assert 'mlx' not in sys.modules, 'mlx imported'")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)


def test_average_gradients_of_an_mx_tree():
    from distcomm.nn import average_gradients
    grads = {"w": mx.full((2, 3), R + 1.0), "b": [mx.array([2 * R], mx.bfloat16)],
             "n": mx.array([R], mx.int32)}
    avg = average_gradients(grads, all_reduce_size=8)
    same(avg["w"], mx.full((2, 3), (N + 1) / 2))
    same(avg["b"][0], mx.array([N - 1], mx.bfloat16))
    same(avg["n"], mx.array([(N - 1) * N // 2 // N], mx.int32))


def test_an_mx_dtype_that_does_not_match_is_refused_before_any_communication():
    with pytest.raises(TypeError, match="dtype=int32 but the array is float32"):
        distcomm.all_sum(mx.ones(3), dtype=mx.int32)
    with pytest.raises(TypeError, match="bfloat16 data must be stored as uint16"):
        distcomm.all_sum(mx.ones(3), dtype=mx.bfloat16)
    same(distcomm.all_sum(mx.ones(3), dtype=mx.float32), mx.full((3,), N, mx.float32))
