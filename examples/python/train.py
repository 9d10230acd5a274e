"""Data-parallel training of a small numpy MLP with distcomm.nn.average_gradients.

    distcomm-launch -n 2 -- python3 examples/python/train.py [--steps 200]
        [--hidden 64] [--layers 2] [--overlap [--bucket-bytes N]]

Every rank builds the same spiral data set and the same initial weights
(same seed), takes its share of every batch, computes gradients by hand,
averages them with one bucketed all_sum (MLX's average_gradients) and takes
the same Adam step. At the end the ranks check that their weights are
bit-identical: the element-wise all_max and all_min of the weights agree.

--overlap mirrors examples/train --overlap: the gradients live in buffers
listed last layer first, backward writes each layer's into them and marks
them ready (average_gradients(overlap=True), DDP's bucketed all-reduce from
backward hooks), so a bucket's all_sum runs while backward computes the
layers below; one wait() per step finishes them. Same all_sums of the same
data: on 2 ranks the weights end bit-identical to the blocking run's
(--hidden 1024 --layers 4 is a size where communication matters).
"""
import argparse
import hashlib
import time

import numpy as np

import distcomm
from distcomm.nn import average_gradients


def spiral(n, arms, rng):
    """n points on `arms` noisy spiral arms in the plane, labelled by arm."""
    y = rng.integers(0, arms, n)
    t = rng.uniform(0.05, 1.0, n)
    angle = 4.0 * t + 2 * np.pi * y / arms + rng.normal(0, 0.2, n)
    x = np.stack([t * np.cos(angle), t * np.sin(angle)], axis=1)
    return x.astype(np.float32), y


def init_params(sizes, rng):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        scale = np.sqrt(2.0 / fan_in)
        params.append({"w": (rng.normal(0, scale, (fan_out, fan_in))).astype(np.float32),
                       "b": np.zeros(fan_out, np.float32)})
    return params


def forward(params, x):
    acts = [x]
    for i, p in enumerate(params):
        z = acts[-1] @ p["w"].T + p["b"]
        acts.append(np.maximum(z, 0) if i < len(params) - 1 else z)
    return acts


def loss_and_grads(params, x, y, out=None, layer_done=None):
    """Mean cross-entropy over this rank's rows and its gradients (a tree
    shaped like params). With out (a list like params of preallocated
    arrays), the gradients are written into it and layer_done(i) is called
    as soon as layer i's are final, last layer first."""
    acts = forward(params, x)
    logits = acts[-1] - acts[-1].max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    loss = -np.log(p[np.arange(len(y)), y] + 1e-12).mean()
    d = p
    d[np.arange(len(y)), y] -= 1
    d /= len(y)
    grads = [None] * len(params)
    for i in reversed(range(len(params))):
        if out is None:
            grads[i] = {"w": d.T @ acts[i], "b": d.sum(axis=0)}
        else:
            grads[i] = out[i]
            np.matmul(d.T, acts[i], out=out[i]["w"])
            np.sum(d, axis=0, out=out[i]["b"])
            layer_done(i)
        if i:
            d = (d @ params[i]["w"]) * (acts[i] > 0)
    return np.float32(loss), grads


class Adam:
    def __init__(self, params, lr, b1=0.9, b2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps, self.t = lr, b1, b2, eps, 0
        self.m = [{k: np.zeros_like(v) for k, v in p.items()} for p in params]
        self.v = [{k: np.zeros_like(v) for k, v in p.items()} for p in params]

    def update(self, params, grads):
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        for p, g, m, v in zip(params, grads, self.m, self.v):
            for k in p:
                m[k] = self.b1 * m[k] + (1 - self.b1) * g[k]
                v[k] = self.b2 * v[k] + (1 - self.b2) * g[k] ** 2
                p[k] -= (self.lr * (m[k] / c1) / (np.sqrt(v[k] / c2) + self.eps)).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=256, help="global batch (split over ranks)")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2, help="hidden layers")
    ap.add_argument("--overlap", action="store_true",
                    help="average each layer's gradients while backward runs")
    ap.add_argument("--bucket-bytes", type=int, default=None,
                    help="all_reduce_size (default 32 MiB, 1 MiB with --overlap)")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    world = distcomm.init()
    rank, size = world.rank(), world.size()
    rng = np.random.default_rng(args.seed)
    x, y = spiral(6000, 3, rng)
    xtr, ytr, xte, yte = x[:4800], y[:4800], x[4800:], y[4800:]
    sizes = [2] + [args.hidden] * args.layers + [3]
    params = init_params(sizes, rng)
    opt = Adam(params, args.lr)
    nfloats = sum(v.size for p in params for v in p.values())
    say = print if rank == 0 else (lambda *a, **k: None)
    bucket = args.bucket_bytes or ((1 << 20) if args.overlap else 32 * 1024**2)
    say(f"distcomm train.py: {size} ranks ({world.backend}), MLP {'-'.join(map(str, sizes))}, "
        f"batch {args.batch} ({args.batch // size} per rank), Adam lr {args.lr}, {args.steps} steps")
    say(f"gradients: {2 * len(params)} arrays, {nfloats} floats, averaged with "
        f"average_gradients ({bucket} B buckets"
        f"{', overlapped with backward' if args.overlap else ''})")
    # --overlap: gradient buffers, listed last layer first (the order
    # backward finishes them); layer i's w and b are leaves 2j and 2j + 1
    # of that list, j = L - 1 - i
    bufs = [{k: np.empty_like(v) for k, v in p.items()} for p in params]
    rev = bufs[::-1]

    comm = 0.0
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        idx = rng.integers(0, len(xtr), args.batch)       # same on every rank
        mine = np.array_split(idx, size)[rank]            # this rank's share
        if args.overlap:
            # time in start/ready/wait is communication; what runs behind
            # backward is not
            t0 = time.perf_counter()
            avg = average_gradients(rev, group=world, all_reduce_size=bucket,
                                    overlap=True)
            comm += time.perf_counter() - t0

            def layer_done(i):
                nonlocal comm
                t = time.perf_counter()
                j = len(params) - 1 - i
                avg.ready(2 * j)
                avg.ready(2 * j + 1)
                comm += time.perf_counter() - t

            loss, grads = loss_and_grads(params, xtr[mine], ytr[mine], bufs, layer_done)
            t0 = time.perf_counter()
            avg.wait()
        else:
            loss, grads = loss_and_grads(params, xtr[mine], ytr[mine])
            t0 = time.perf_counter()
            grads = average_gradients(grads, group=world, all_reduce_size=bucket)
        loss = distcomm.all_sum(loss, group=world) / size
        comm += time.perf_counter() - t0
        opt.update(params, grads)
        if step == 1 or step % 25 == 0 or step == args.steps:
            say(f"step {step:4d}  loss {float(loss):.6f}")
    elapsed = time.perf_counter() - start

    acc = (forward(params, xte)[-1].argmax(axis=1) == yte).mean()
    flat = np.concatenate([v.reshape(-1) for p in params for v in p.values()])
    same = np.array_equal(distcomm.all_max(flat), distcomm.all_min(flat))
    say(f"held-out accuracy {100 * acc:.2f}% ({len(yte)} points) | "
        f"{args.steps * args.batch / elapsed:.0f} samples/s | communication "
        f"{100 * comm / elapsed:.0f}% of step time")
    digest = hashlib.sha256(flat.tobytes()).hexdigest()[:16]
    say(f"weights {'identical' if same else 'DIFFER'} on all {size} ranks")
    say(f"weights sha256 {digest}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
