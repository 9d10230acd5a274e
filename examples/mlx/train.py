"""Data-parallel training of a small MLX MLP, in mlx-lm's pattern: each rank
takes its share of every batch, nn.value_and_grad gives its gradients,
mlx.nn.average_gradients averages them over mx.distributed's group, and every
rank takes the same optimizer step. Nothing here knows about distcomm.

    distcomm-launch --mlx -n 2 -- python3 examples/mlx/train.py [--steps 200]

The same program on MLX's own backends:

    mlx.launch -n 2 examples/mlx/train.py                       # MLX's ring
    MLX_MPI_LIBNAME=libmpi.so.40 mpirun --allow-run-as-root -np 2 \\
        -x MLX_MPI_LIBNAME python3 examples/mlx/train.py        # Open MPI

It prints the loss as it falls and ends with "weights identical on all N
ranks" once the element-wise all_max and all_min of every weight agree (the
ranks stayed in lock step), or exits 1 saying which weight differs.
"""
import argparse
import sys

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.nn.utils import average_gradients


class MLP(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.layers = [nn.Linear(i, o) for i, o in zip(dims[:-1], dims[1:])]

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = nn.relu(layer(x))
        return self.layers[-1](x)


def spiral(n, arms, key):
    """n points on `arms` noisy spiral arms in the plane, labelled by arm."""
    k1, k2, k3 = mx.random.split(key, 3)
    y = mx.random.randint(0, arms, (n,), key=k1)
    t = mx.random.uniform(0.05, 1.0, (n,), key=k2)
    angle = 4.0 * t + 2 * 3.14159265 * y / arms + 0.2 * mx.random.normal((n,), key=k3)
    return mx.stack([t * mx.cos(angle), t * mx.sin(angle)], axis=1), y


def loss_fn(model, x, y):
    return nn.losses.cross_entropy(model(x), y, reduction="mean")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=256, help="global batch size")
    p.add_argument("--hidden", type=int, default=64)
    args = p.parse_args()

    group = mx.distributed.init()
    n, rank = group.size(), group.rank()
    if args.batch % n:
        sys.exit(f"--batch {args.batch} does not split over {n} ranks")

    mx.random.seed(0)  # the same data and initial weights on every rank
    x, y = spiral(8192, 3, mx.random.key(1))
    model = MLP([2, args.hidden, args.hidden, 3])
    mx.eval(model.parameters())
    opt = optim.Adam(learning_rate=0.01)
    loss_and_grad = nn.value_and_grad(model, loss_fn)

    def step(xb, yb):
        loss, grads = loss_and_grad(model, xb, yb)
        grads = average_gradients(grads, group=group)
        opt.update(model, grads)
        return mx.distributed.all_sum(loss, group=group) / n

    share = args.batch // n
    for i in range(args.steps):
        start = (i * args.batch) % (x.shape[0] - args.batch) + rank * share
        loss = step(x[start:start + share], y[start:start + share])
        mx.eval(loss, model.parameters(), opt.state)
        if rank == 0 and (i % 50 == 0 or i == args.steps - 1):
            print(f"step {i} loss {loss.item():.4f}", flush=True)

    acc = mx.mean(mx.argmax(model(x), axis=1) == y).item()
    for name, w in nn.utils.tree_flatten(model.parameters()):
        hi = mx.distributed.all_max(w, group=group)
        lo = mx.distributed.all_min(w, group=group)
        if not mx.array_equal(hi, lo).item():
            sys.exit(f"rank {rank}: weight {name} differs between ranks")
    if rank == 0:
        print(f"final loss {loss.item():.4f} accuracy {acc:.3f}")
        print(f"weights identical on all {n} ranks")


if __name__ == "__main__":
    main()
