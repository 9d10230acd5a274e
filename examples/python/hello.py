"""The first program of MLX's distributed docs, on numpy arrays.

MLX's version:

    import mlx.core as mx
    world = mx.distributed.init()
    x = mx.distributed.all_sum(mx.ones(10))
    print(world.rank(), x)

Alone it prints "0 [1. 1. ...]"; launched on N ranks
(distcomm-launch -n 2 -- python3 examples/python/hello.py) every rank
prints N's.
"""
import numpy as np

import distcomm as dist  # instead of: import mlx.core as mx (dist = mx.distributed)

world = dist.init()
x = dist.all_sum(np.ones(10, dtype=np.float32))
print(world.rank(), x)
