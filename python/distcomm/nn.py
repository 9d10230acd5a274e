"""distcomm.nn: MLX's distributed training helpers for numpy.

- ``average_gradients`` (``mlx.nn.average_gradients``): average a tree of
  gradients over a group with a few large all_sums instead of many small ones.
- ``clip_grad_norm_sharded`` (``mlx.nn.utils.clip_grad_norm_sharded``).
- ``shard_linear`` and the two forward passes of tensor-parallel linear
  layers (``mlx.nn.layers.distributed``), on (out, in) numpy weights.

The collectives are looked up as ``distcomm.all_sum`` at call time, so a test
can count them by replacing that attribute, as MLX's own tests do.
"""

import numpy as np

import distcomm

__all__ = [
    "average_gradients", "clip_grad_norm_sharded", "shard_linear",
    "all_to_sharded_linear", "sharded_to_all_linear",
    "AllToShardedLinear", "ShardedToAllLinear",
]


# ---- trees: nested dicts, lists and tuples with arrays at the leaves -------

def _flatten(tree, prefix, out):
    if isinstance(tree, dict):
        for k, v in tree.items():
            _flatten(v, prefix + (k,), out)
    elif isinstance(tree, (list, tuple)):
        for i, v in enumerate(tree):
            _flatten(v, prefix + (i,), out)
    else:
        out.append((prefix, tree))
    return out


def _rebuild(tree, leaves):
    """A tree shaped like ``tree`` whose leaves come from the iterator."""
    if isinstance(tree, dict):
        return {k: _rebuild(v, leaves) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_rebuild(v, leaves) for v in tree)
    return next(leaves)


def _tree_map(fn, tree):
    return _rebuild(tree, iter([fn(leaf) for _, leaf in _flatten(tree, (), [])]))


# ---- average_gradients ------------------------------------------------------

def _average(x, group, n):
    """all_sum(x) / n; floating arrays keep their dtype (the sum is new, so
    dividing in place costs no allocation)."""
    s = distcomm.all_sum(x, group=group)
    if s.dtype.kind in "fc":
        np.divide(s, n, out=s)
        return s
    return s / n  # integers: a true average, as MLX's division gives


def _buckets(sizes, itemsize, limit):
    """Indices grouped in order; a bucket closes once it holds >= limit bytes."""
    groups, cur, nbytes = [], [], 0
    for i, size in enumerate(sizes):
        cur.append(i)
        nbytes += size * itemsize
        if nbytes >= limit:
            groups.append(cur)
            cur, nbytes = [], 0
    if cur:
        groups.append(cur)
    return groups


def average_gradients(gradients, group=None, all_reduce_size=32 * 1024**2):
    """Average a tree of gradients over ``group`` (default: the world).

    Like MLX: arrays are flattened in tree order and concatenated into
    buckets of at least ``all_reduce_size`` bytes, each reduced with one
    ``all_sum`` and divided by the group size; ``all_reduce_size <= 0``
    reduces each array on its own, and so do trees of mixed dtypes. A group
    of one returns ``gradients`` unchanged. Returns a tree of the same
    structure (dicts, lists, tuples) with arrays of the same shapes.
    """
    group = group if group is not None else distcomm.init()
    n = group.size()
    if n == 1:
        return gradients
    if all_reduce_size <= 0:
        return _tree_map(lambda x: _average(x, group, n), gradients)
    leaves = [np.asarray(g) for _, g in _flatten(gradients, (), [])]
    if not leaves:
        return gradients
    if any(g.dtype != leaves[0].dtype for g in leaves):
        return average_gradients(gradients, group, 0)
    sizes = [g.size for g in leaves]
    result = [None] * len(leaves)
    for bucket in _buckets(sizes, leaves[0].dtype.itemsize, all_reduce_size):
        flat = np.concatenate([leaves[i].reshape(-1) for i in bucket])
        parts = np.split(_average(flat, group, n), np.cumsum([sizes[i] for i in bucket])[:-1])
        for i, part in zip(bucket, parts):
            result[i] = part.reshape(leaves[i].shape)
    return _rebuild(gradients, iter(result))


def clip_grad_norm_sharded(gradients, max_norm, group=None):
    """Clip gradients whose shards live on different ranks.

    The global norm is sqrt(all_sum of each rank's sum of squares); every
    array is scaled by min(max_norm / (norm + 1e-6), 1). Returns
    ``(clipped_tree, norm)`` with the norm before clipping, like MLX.
    """
    group = group if group is not None else distcomm.init()
    local = sum(float(np.vdot(g, g).real) for _, g in _flatten(gradients, (), []))
    total = distcomm.all_sum(np.array([local], dtype=np.float64), group=group)
    norm = np.float64(np.sqrt(total[0]))
    scale = min(max_norm / (norm + 1e-6), 1.0)
    clipped = _tree_map(lambda g: (np.asarray(g) * scale).astype(np.asarray(g).dtype), gradients)
    return clipped, norm


# ---- tensor parallelism -----------------------------------------------------

def _rank_sizes(dim, n):
    """dim split as evenly as possible, the remainder to the first ranks."""
    base, extra = divmod(dim, n)
    return [base + (r < extra) for r in range(n)]


def _check_sizes(sizes, dim, n, what):
    if len(sizes) != n or sum(sizes) != dim:
        raise ValueError(f"Expected {n} sizes that sum to {dim} but got {list(sizes)}.")
    if min(sizes) <= 0:
        raise ValueError(f"Cannot shard the {what} of size {dim} across {n} ranks.")


def _segment_bounds(dim, segments):
    """Start offsets of the segments: an int count or a list of fractions."""
    if isinstance(segments, int):
        if segments <= 0 or dim % segments:
            raise ValueError(f"Cannot split a dimension of {dim} into {segments} segments.")
        return [dim // segments * i for i in range(1, segments)]
    return [int(s * dim) for s in segments]


def _shard_axis(w, axis, n, r, segments, sizes):
    """This rank's part of w along axis: its slice of every segment."""
    dim = w.shape[axis]
    if segments == 1:
        sizes = _rank_sizes(dim, n) if sizes is None else list(sizes)
        _check_sizes(sizes, dim, n, "axis")
        start = sum(sizes[:r])
        return np.take(w, range(start, start + sizes[r]), axis=axis)
    if sizes is not None:
        raise ValueError("Explicit sizes are only supported with segments=1.")
    parts = []
    for seg in np.split(w, _segment_bounds(dim, segments), axis=axis):
        if seg.shape[axis] % n:
            raise ValueError(f"Cannot shard a segment of {seg.shape[axis]} across {n} ranks.")
        parts.append(np.split(seg, n, axis=axis)[r])
    return np.concatenate(parts, axis=axis)


def _check_sharding(sharding):
    if sharding not in ("all-to-sharded", "sharded-to-all"):
        raise ValueError(f"Sharding type {sharding!r} not supported, choose one "
                         "of 'all-to-sharded' or 'sharded-to-all'")


def shard_linear(weight, bias, sharding, segments=1, group=None, sizes=None):
    """This rank's ``(weight, bias)`` of a linear layer y = x @ weight.T + bias.

    ``weight`` is (out, in). "all-to-sharded" splits the rows of the weight
    and the bias (each rank computes some outputs from the whole input);
    "sharded-to-all" splits the columns and keeps the bias whole (each rank
    computes a partial product from its slice of the input; an all_sum
    completes it). ``segments`` splits fused weights (e.g. 3 for QKV) segment
    by segment; ``sizes`` gives each rank's share explicitly (segments=1).
    ``bias`` may be None. ``group`` is anything with rank() and size().
    """
    _check_sharding(sharding)
    group = group if group is not None else distcomm.init()
    n, r = group.size(), group.rank()
    weight = np.asarray(weight)
    if sharding == "all-to-sharded":
        w = _shard_axis(weight, max(weight.ndim - 2, 0), n, r, segments, sizes)
        b = None if bias is None else _shard_axis(np.asarray(bias), -1, n, r, segments, sizes)
    else:
        w = _shard_axis(weight, -1, n, r, segments, sizes)
        b = None if bias is None else np.array(bias)
    return np.ascontiguousarray(w), b


def all_to_sharded_linear(x, weight, bias=None):
    """Forward of an all-to-sharded layer: the whole x in, this rank's outputs
    out (no communication; MLX sums the input's gradient in the backward)."""
    y = x @ weight.T
    return y if bias is None else y + bias


def sharded_to_all_linear(x, weight, bias=None, group=None):
    """Forward of a sharded-to-all layer: this rank's slice of x in, the whole
    output out on every rank (one all_sum of the partial products)."""
    y = distcomm.all_sum(x @ weight.T, group=group)
    return y if bias is None else y + bias


class AllToShardedLinear:
    """A callable all-to-sharded layer holding this rank's weight and bias."""

    def __init__(self, weight, bias=None, group=None):
        self.weight, self.bias, self.group = weight, bias, group

    @classmethod
    def from_linear(cls, weight, bias=None, *, segments=1, group=None, sizes=None):
        w, b = shard_linear(weight, bias, "all-to-sharded", segments, group, sizes)
        return cls(w, b, group)

    def __call__(self, x):
        return all_to_sharded_linear(x, self.weight, self.bias)


class ShardedToAllLinear:
    """A callable sharded-to-all layer holding this rank's weight and bias."""

    def __init__(self, weight, bias=None, group=None):
        self.weight, self.bias, self.group = weight, bias, group

    @classmethod
    def from_linear(cls, weight, bias=None, *, segments=1, group=None, sizes=None):
        w, b = shard_linear(weight, bias, "sharded-to-all", segments, group, sizes)
        return cls(w, b, group)

    def __call__(self, x):
        return sharded_to_all_linear(x, self.weight, self.bias, self.group)
