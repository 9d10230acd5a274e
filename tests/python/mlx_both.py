"""One MLX program using mx.distributed (on distcomm through
distcomm-launch --mlx) and distcomm's Python module on mx.arrays side by
side: MLX's all_sum, then what MLX lacks (broadcast, all_to_all, a
request), then MLX's all_sum again; rank 0 prints "mx and distcomm agree
on N ranks" when every result is right."""
import sys

import mlx.core as mx

import distcomm

g = mx.distributed.init()
w = distcomm.init()
n, r = g.size(), g.rank()
if (w.size(), w.rank()) != (n, r):
    sys.exit(f"mx.distributed says rank {r} of {n}, distcomm {w.rank()} of {w.size()}")
checks = {
    "mx all_sum": mx.array_equal(mx.distributed.all_sum(mx.ones(4)), mx.full((4,), n)),
    "broadcast": mx.array_equal(distcomm.broadcast(mx.array([r], mx.bfloat16), root=n - 1),
                                mx.array([n - 1], mx.bfloat16)),
    "all_to_all": mx.array_equal(distcomm.all_to_all(mx.arange(n) + n * r),
                                 mx.arange(n) * n + r),
    "request": mx.array_equal(distcomm.all_max(mx.array([r]), async_op=True).wait(),
                              mx.array([n - 1])),
    "mx all_sum after": mx.array_equal(mx.distributed.all_sum(mx.array([r])),
                                       mx.array([n * (n - 1) // 2])),
}
bad = [k for k, ok in checks.items() if not ok.item()]
if bad:
    sys.exit(f"rank {r}: wrong results: {', '.join(bad)}")
if r == 0:
    print(f"mx and distcomm agree on {n} ranks")
