"""distcomm.nn: MLX's average_gradients, clip_grad_norm_sharded and
shard_linear cases re-expressed for numpy."""
import math

import numpy as np
import pytest

import distcomm
from conftest import FakeGroup
from distcomm.nn import (
    AllToShardedLinear,
    ShardedToAllLinear,
    all_to_sharded_linear,
    average_gradients,
    clip_grad_norm_sharded,
    shard_linear,
    sharded_to_all_linear,
)


def reductions(on, fn, *args, **kwargs):
    """fn's result and the collectives it issued on the group on."""
    before = on.collectives()
    result = fn(*args, **kwargs)
    return result, on.collectives() - before


def test_average_gradients_call_counts(world):
    grads = [np.ones(10, np.float32) for _ in range(10)]
    expected = (1, 2, 10) if world.size() > 1 else (0, 0, 0)  # a group of one returns at once
    for kwargs, calls in zip(({}, {"all_reduce_size": 4 * 50}, {"all_reduce_size": 0}), expected):
        new, count = reductions(world, average_gradients, grads, **kwargs)
        assert len(new) == 10
        assert all(np.all(g == 1) and g.dtype == np.float32 and g.shape == (10,) for g in new)
        assert count == calls


def test_average_gradients_tree_structure(world):
    r, n = world.rank(), world.size()
    grads = {"layers": [{"w": np.full((3, 4), r, np.float32), "b": np.arange(4, dtype=np.float32) * r},
                        (np.ones(2, np.float32) * r, np.float32(r))],
             "head": np.full((2, 2), 2 * r, np.float32)}
    avg, count = reductions(world, average_gradients, grads, group=world)
    mean = (n - 1) / 2
    assert set(avg) == {"layers", "head"} and isinstance(avg["layers"], list)
    assert isinstance(avg["layers"][1], tuple)
    assert avg["layers"][0]["w"].shape == (3, 4) and np.allclose(avg["layers"][0]["w"], mean)
    assert np.allclose(avg["layers"][0]["b"], np.arange(4) * mean)
    assert avg["layers"][1][1].shape == () and np.isclose(avg["layers"][1][1], mean)
    assert np.allclose(avg["head"], 2 * mean)
    assert count == (1 if n > 1 else 0)
    assert np.all(grads["head"] == 2 * r)  # the caller's arrays are not touched


def test_average_gradients_one_bucket_per_dtype(world):
    """The library's buckets: one per dtype (MLX falls back to one all_sum
    per array for a mixed tree; the values are the same)."""
    grads = [np.ones(3, np.float32), np.ones(3, np.float64), np.ones(3, np.float32)]
    avg, count = reductions(world, average_gradients, grads)
    assert [g.dtype for g in avg] == [np.float32, np.float64, np.float32]
    assert all(np.all(g == 1) for g in avg)
    assert count == (2 if world.size() > 1 else 0)


def truncated_mean(total, n):
    """C's integer division: toward zero."""
    return np.sign(total) * (np.abs(total) // n)


@pytest.mark.parametrize("all_reduce_size", [32 * 1024**2, 0])
def test_average_gradients_integers_truncate_toward_zero(world, all_reduce_size):
    """The one semantics of the library: integer averages keep their dtype
    and truncate (2 ranks: 1 + 4 = 5 gives 2, -5 gives -2, not 2.5 or -3)."""
    r, n = world.rank(), world.size()
    mine = np.array([3 * r + 1, -(3 * r + 1), 7, 0], np.int32)
    total = sum(np.array([3 * k + 1, -(3 * k + 1), 7, 0], np.int64) for k in range(n))
    grads = {"i32": mine, "i64": mine.astype(np.int64), "u8": np.array([3 * r + 1], np.uint8),
             "flag": np.array([r == 0, False])}
    avg = average_gradients(grads, all_reduce_size=all_reduce_size)
    assert avg["i32"].dtype == np.int32 and avg["i64"].dtype == np.int64
    assert avg["u8"].dtype == np.uint8 and avg["flag"].dtype == np.bool_
    if n == 1:
        assert avg is grads
        return
    assert np.array_equal(avg["i32"], truncated_mean(total, n))
    assert np.array_equal(avg["i64"], truncated_mean(total, n))
    assert avg["u8"][0] == truncated_mean(total[0], n)
    assert list(avg["flag"]) == [True, False]  # bool: the ranks' logical or, not divided
    if n == 2:
        assert list(avg["i32"]) == [2, -2, 7, 0]


def test_average_gradients_float16_and_complex64(world):
    r, n = world.rank(), world.size()
    grads = [np.full(5, r + 1, np.float16), np.full(3, (r + 1) * (1 - 2j), np.complex64)]
    avg = average_gradients(grads, all_reduce_size=0)
    mean = (n + 1) / 2
    assert avg[0].dtype == np.float16 and np.allclose(avg[0], mean)
    assert avg[1].dtype == np.complex64 and np.allclose(avg[1], mean * (1 - 2j))


@pytest.mark.skipif(distcomm.init().size() < 2, reason="a group of one returns at once")
def test_average_gradients_bad_dtype_raises_before_communicating(world):
    before = world.collectives()
    with pytest.raises(TypeError):
        average_gradients([np.ones(2, np.float32), np.array(["a", "b"])])
    assert world.collectives() == before


def test_clip_grad_norm_sharded(world):
    n = world.size()
    value = 3.0
    grads = {"a": np.ones((4, 3), np.float32) * value, "b": np.ones(5, np.float32) * value}
    expected = math.sqrt(n * (4 * 3 + 5)) * value
    (clipped, norm), count = reductions(world, clip_grad_norm_sharded, grads, max_norm=1e9,
                                        group=world)
    assert count == 1  # one all_sum, even in a group of one
    assert isinstance(norm, np.float64) and np.isclose(norm, expected)
    for k in grads:
        assert np.array_equal(clipped[k], grads[k]) and clipped[k].dtype == np.float32
    clipped, norm = clip_grad_norm_sharded(grads, max_norm=1.0, group=world)
    scale = 1.0 / (expected + 1e-6)
    for k in grads:
        assert np.allclose(clipped[k], grads[k] * scale, rtol=1e-5)
        assert clipped[k].dtype == np.float32
        # the library scales float32 by the float32 factor
        assert np.array_equal(clipped[k], grads[k] * np.float32(scale))
    assert np.all(grads["a"] == value)  # the caller's arrays are not touched


def test_clip_grad_norm_sharded_keeps_dtypes_and_nan(world):
    grads = [np.full(4, 2.0), np.full(2, 2.0, np.float16)]
    clipped, norm = clip_grad_norm_sharded(grads, max_norm=1.0)
    assert [g.dtype for g in clipped] == [np.float64, np.float16]
    assert np.isclose(norm, 2.0 * math.sqrt(6 * world.size()))
    assert np.allclose(clipped[0], 2.0 / (norm + 1e-6))
    # a NaN norm leaves the gradients as they are instead of making all NaN
    clipped, norm = clip_grad_norm_sharded([np.array([np.nan, 1.0])], max_norm=1.0)
    assert np.isnan(norm) and clipped[0][1] == 1.0


def test_clip_grad_norm_sharded_refuses_what_the_library_refuses(world):
    before = world.collectives()
    with pytest.raises(distcomm.InvalidArgumentError, match="not a floating type"):
        clip_grad_norm_sharded([np.ones(3, np.int32)], max_norm=1.0)
    with pytest.raises(distcomm.InvalidArgumentError, match="max_norm"):
        clip_grad_norm_sharded([np.ones(3, np.float32)], max_norm=-1.0)
    assert world.collectives() == before
    assert distcomm.all_sum(np.ones(1))[0] == world.size()  # the world is fine


def rank_part(world, dims):
    """This rank's rows, as shard_linear cuts them (the first dims % n ranks
    get one more, like MLX and numpy's array_split)."""
    n, r = world.size(), world.rank()
    base, extra = divmod(dims, n)
    start = r * base + min(r, extra)
    return slice(start, start + base + (r < extra))


def test_shard_linear_matches_the_unsharded_product(world):
    rng = np.random.default_rng(0xF0F0F0F0)  # same weights and inputs everywhere
    x = rng.normal(size=(4, 1024)).astype(np.float32)
    weight = rng.normal(size=(1024, 1024)).astype(np.float32) / 32
    bias = rng.normal(size=1024).astype(np.float32)
    part = rank_part(world, 1024)
    y = x @ weight.T + bias

    w1, b1 = shard_linear(weight, bias, "all-to-sharded")
    rows = part.stop - part.start
    assert w1.shape == (rows, 1024) and b1.shape == (rows,)
    assert np.allclose(all_to_sharded_linear(x, w1, b1), y[:, part], atol=1e-4, rtol=1e-4)

    w2, b2 = shard_linear(weight, bias, "sharded-to-all")
    assert w2.shape == (1024, rows) and b2.shape == (1024,)
    assert np.allclose(sharded_to_all_linear(x[:, part], w2, b2), y, atol=1e-4, rtol=1e-4)


def test_tensor_parallel_mlp(world):
    """all-to-sharded then sharded-to-all: one all_sum per forward pass."""
    rng = np.random.default_rng(1)
    w1, b1 = rng.normal(size=(64, 16)), rng.normal(size=64)
    w2, b2 = rng.normal(size=(8, 64)), rng.normal(size=8)
    x = rng.normal(size=(5, 16))
    want = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
    up = AllToShardedLinear.from_linear(w1, b1, group=world)
    down = ShardedToAllLinear.from_linear(w2, b2, group=world)
    before = world.collectives()
    got = down(np.maximum(up(x), 0))
    assert np.allclose(got, want)
    assert world.collectives() - before == 1


def test_shard_linear_uneven_shards():
    weight = np.arange(12 * 11, dtype=np.float32).reshape(12, 11)
    bias = np.arange(12, dtype=np.float32)
    shards = [shard_linear(weight, bias, "all-to-sharded", sizes=[5, 4, 3], group=FakeGroup(3, r))
              for r in range(3)]
    assert [w.shape for w, _ in shards] == [(5, 11), (4, 11), (3, 11)]
    assert np.array_equal(np.concatenate([w for w, _ in shards]), weight)
    assert np.array_equal(np.concatenate([b for _, b in shards]), bias)
    # the default split gives the remainder to the first ranks
    shards = [shard_linear(weight, bias, "sharded-to-all", group=FakeGroup(3, r)) for r in range(3)]
    assert [w.shape for w, _ in shards] == [(12, 4), (12, 4), (12, 3)]
    assert np.array_equal(np.concatenate([w for w, _ in shards], axis=1), weight)
    assert all(np.array_equal(b, bias) for _, b in shards)


def test_shard_linear_segments():
    """A fused QKV weight: every rank gets its slice of each of the 3 parts."""
    weight = np.arange(24 * 2).reshape(24, 2)
    w, b = shard_linear(weight, None, "all-to-sharded", segments=3, group=FakeGroup(2, 1))
    assert b is None
    assert np.array_equal(w, np.concatenate([weight[4:8], weight[12:16], weight[20:24]]))


def test_shard_linear_errors():
    weight, bias, group = np.ones((12, 10)), np.ones(12), FakeGroup(3, 0)
    with pytest.raises(ValueError):
        shard_linear(weight, bias, "all-to-sharded", sizes=[5, 4, 2], group=group)
    with pytest.raises(ValueError):
        shard_linear(weight, bias, "all-to-sharded", sizes=[6, 6], group=group)
    with pytest.raises(ValueError):
        shard_linear(weight, bias, "all-to-sharded", sizes=[12, 0, 0], group=group)
    with pytest.raises(ValueError):
        shard_linear(np.ones((2, 10)), None, "all-to-sharded", group=group)
    with pytest.raises(ValueError):
        shard_linear(weight, bias, "all-to-sharded", segments=2, sizes=[4, 4, 4], group=group)
    with pytest.raises(ValueError):
        shard_linear(np.ones((14, 10)), None, "all-to-sharded", segments=2, group=group)
    with pytest.raises(ValueError, match="not supported"):
        shard_linear(weight, bias, "rows", group=group)
