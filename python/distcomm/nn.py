"""distcomm.nn: MLX's distributed training helpers for numpy.

- ``average_gradients`` (``mlx.nn.average_gradients``): average a tree of
  gradients over a group with a few large all_sums instead of many small ones.
- ``clip_grad_norm_sharded`` (``mlx.nn.utils.clip_grad_norm_sharded``).
- ``shard_linear`` and the two forward passes of tensor-parallel linear
  layers (``mlx.nn.layers.distributed``), on (out, in) numpy weights.

The first two run the C library's own helpers (dc_average_gradients and
dc_clip_grad_norm_sharded) on copies of the leaves: this module only walks
the tree, so Python and C programs bucket, average and clip alike. Count
their reductions with ``group.collectives()``.
"""

import numpy as np

import distcomm
from distcomm import _distcomm as _c

__all__ = [
    "average_gradients", "Overlapped", "clip_grad_norm_sharded", "shard_linear",
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


# ---- average_gradients and clip_grad_norm_sharded (the C helpers) -------

def _leaves(gradients):
    """Private C-contiguous copies of the leaves (the C helpers work in
    place; the caller's arrays stay as they are) and their dtype codes.
    Every dtype is checked here, before any rank communicates."""
    arrays, codes = [], []
    for _, g in _flatten(gradients, (), []):
        a, code = distcomm._input(g)
        arrays.append(a.copy(order="C"))
        codes.append(code)
    return arrays, codes


def average_gradients(gradients, group=None, all_reduce_size=32 * 1024**2,
                      overlap=False):
    """Average a tree of gradients over ``group`` (default: the world).

    Runs the library's ``dc_average_gradients``: arrays are taken in tree
    order and packed into buckets of at least ``all_reduce_size`` bytes, one
    bucket per dtype, each reduced with one ``all_sum`` and divided by the
    group size; an array that alone reaches the limit is reduced on its own,
    and ``all_reduce_size <= 0`` reduces every array on its own. Results keep
    their dtype: floats are multiplied by 1/size (float16 through float32),
    integers are divided with truncation toward zero (all_sum of int32
    [1, -1] and [2, -2] over 2 ranks gives [1, -1]; a sum that wraps in the
    dtype wraps first), and bool stays the logical or of the ranks.
    A group of one returns ``gradients`` unchanged. Otherwise returns a new
    tree of the same structure (dicts, lists, tuples) and shapes.

    ``overlap=True`` is the overlapped form (DDP's bucketed all-reduce from
    backward hooks, ``dc_average_gradients_start``): the leaves must be
    writable C-contiguous numpy arrays, the gradient buffers backward fills,
    and they are averaged in place. Returns an ``Overlapped`` handle: call
    ``ready(i)`` as soon as leaf ``i`` (tree order) is final, and a
    bucket's all_sum starts once its leaves are ready and every bucket
    before it has started, so list the leaves in the order backward makes
    them (last layer first). ``wait()`` finishes every bucket (leaves never
    marked count as ready there) and returns ``gradients``. The buckets and
    the results are bit-identical to the blocking form's.
    """
    group = distcomm._group(group)
    if overlap:
        return Overlapped(gradients, group, all_reduce_size)
    if group.size() == 1:
        return gradients
    arrays, codes = _leaves(gradients)
    _c.average_gradients(group, arrays, codes, int(all_reduce_size))
    # mx.array leaves come back as mx.arrays (one copy each, as every op's)
    likes = [distcomm._like(g, c) for (_, g), c in zip(_flatten(gradients, (), []), codes)]
    return _rebuild(gradients, iter(distcomm._result(a, k) for a, k in zip(arrays, likes)))


class Overlapped:
    """average_gradients(..., overlap=True): ready(i), then one wait()."""

    def __init__(self, gradients, group, all_reduce_size):
        arrays, codes = [], []
        for path, g in _flatten(gradients, (), []):
            if not (isinstance(g, np.ndarray) and g.flags.c_contiguous
                    and g.flags.writeable):
                raise TypeError(
                    "distcomm: average_gradients(overlap=True) averages in "
                    f"place: leaf {list(path)} must be a writable C-contiguous "
                    f"numpy array, not {type(g).__name__}")
            a, code = distcomm._input(g)
            if a is not g:  # a byte-swapped copy would not be in place
                raise TypeError(f"distcomm: average_gradients(overlap=True): "
                                f"leaf {list(path)} is not in native byte order")
            arrays.append(a)
            codes.append(code)
        self._tree = gradients
        self._avg = _c.average_start(group, arrays, codes, int(all_reduce_size))

    def ready(self, i):
        """Leaf i (tree order) is final: its bucket starts once complete."""
        self._avg.ready(i)

    def wait(self):
        """Finish every bucket (GIL released, Ctrl-C interrupts) and return
        the gradients, averaged in place; raises the first failure."""
        self._avg.wait()
        return self._tree


def clip_grad_norm_sharded(gradients, max_norm, group=None):
    """Clip gradients whose shards live on different ranks.

    Runs the library's ``dc_clip_grad_norm_sharded``: the global norm is
    sqrt(all_sum of each rank's sum of squares, in float64); every array is
    scaled by max_norm / (norm + 1e-6) when that is below 1 (in float32 for
    float16/bfloat16/float32/complex64 arrays, float64 for float64), and
    left as it is otherwise, also when the norm is NaN. Floating dtypes only
    (``InvalidArgumentError`` otherwise, and for a negative or NaN
    max_norm). Always one all_sum, even in a group of one. Returns
    ``(clipped_tree, norm)`` with the norm before clipping, like MLX.
    """
    group = distcomm._group(group)
    arrays, codes = _leaves(gradients)
    norm = _c.clip_grad_norm_sharded(group, arrays, codes, float(max_norm))
    return _rebuild(gradients, iter(arrays)), np.float64(norm)


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
