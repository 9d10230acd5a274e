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


@pytest.fixture
def count_all_sum(monkeypatch):
    """Replaces distcomm.all_sum with a counting wrapper, as MLX's test does."""
    calls = []
    original = distcomm.all_sum

    def counting(x, **kwargs):
        calls.append(np.asarray(x).dtype)
        return original(x, **kwargs)

    monkeypatch.setattr(distcomm, "all_sum", counting)
    return calls


def test_average_gradients_call_counts(world, count_all_sum):
    grads = [np.ones(10, np.float32) for _ in range(10)]
    expected = (1, 2, 10) if world.size() > 1 else (0, 0, 0)  # a group of one returns at once
    for kwargs, calls in zip(({}, {"all_reduce_size": 4 * 50}, {"all_reduce_size": 0}), expected):
        count_all_sum.clear()
        new = average_gradients(grads, **kwargs)
        assert len(new) == 10
        assert all(np.all(g == 1) and g.dtype == np.float32 and g.shape == (10,) for g in new)
        assert len(count_all_sum) == calls


def test_average_gradients_tree_structure(world, count_all_sum):
    r, n = world.rank(), world.size()
    grads = {"layers": [{"w": np.full((3, 4), r, np.float32), "b": np.arange(4, dtype=np.float32) * r},
                        (np.ones(2, np.float32) * r, np.float32(r))],
             "head": np.full((2, 2), 2 * r, np.float32)}
    avg = average_gradients(grads, group=world)
    mean = (n - 1) / 2
    assert set(avg) == {"layers", "head"} and isinstance(avg["layers"], list)
    assert isinstance(avg["layers"][1], tuple)
    assert avg["layers"][0]["w"].shape == (3, 4) and np.allclose(avg["layers"][0]["w"], mean)
    assert np.allclose(avg["layers"][0]["b"], np.arange(4) * mean)
    assert avg["layers"][1][1].shape == () and np.isclose(avg["layers"][1][1], mean)
    assert np.allclose(avg["head"], 2 * mean)
    assert len(count_all_sum) == (1 if n > 1 else 0)


def test_average_gradients_mixed_dtypes_reduce_one_by_one(world, count_all_sum):
    grads = [np.ones(3, np.float32), np.ones(3, np.float64), np.ones(3, np.float32)]
    avg = average_gradients(grads)
    assert [g.dtype for g in avg] == [np.float32, np.float64, np.float32]
    assert all(np.all(g == 1) for g in avg)
    assert len(count_all_sum) == (3 if world.size() > 1 else 0)


def test_clip_grad_norm_sharded(world):
    n = world.size()
    value = 3.0
    grads = {"a": np.ones((4, 3), np.float32) * value, "b": np.ones(5, np.float32) * value}
    expected = math.sqrt(n * (4 * 3 + 5)) * value
    clipped, norm = clip_grad_norm_sharded(grads, max_norm=1e9, group=world)
    assert np.isclose(norm, expected)
    for k in grads:
        assert np.allclose(clipped[k], grads[k]) and clipped[k].dtype == np.float32
    clipped, norm = clip_grad_norm_sharded(grads, max_norm=1.0, group=world)
    scale = 1.0 / (expected + 1e-6)
    for k in grads:
        assert np.allclose(clipped[k], grads[k] * scale, rtol=1e-5)


def rank_part(world, dims):
    n, r = world.size(), world.rank()
    return slice(r * dims // n, (r + 1) * dims // n)


def test_shard_linear_matches_the_unsharded_product(world):
    rng = np.random.default_rng(0xF0F0F0F0)  # same weights and inputs everywhere
    x = rng.normal(size=(4, 1024)).astype(np.float32)
    weight = rng.normal(size=(1024, 1024)).astype(np.float32) / 32
    bias = rng.normal(size=1024).astype(np.float32)
    part = rank_part(world, 1024)
    y = x @ weight.T + bias

    w1, b1 = shard_linear(weight, bias, "all-to-sharded")
    assert w1.shape == (1024 // world.size(), 1024) and b1.shape == (1024 // world.size(),)
    assert np.allclose(all_to_sharded_linear(x, w1, b1), y[:, part], atol=1e-4, rtol=1e-4)

    w2, b2 = shard_linear(weight, bias, "sharded-to-all")
    assert w2.shape == (1024, 1024 // world.size()) and b2.shape == (1024,)
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
