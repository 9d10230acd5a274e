"""Data-parallel training of a small numpy MLP with distcomm.nn.average_gradients.

    distcomm-launch -n 2 -- python3 examples/python/train.py [--steps 200]
        [--hidden 64] [--layers 2] [--overlap [--bucket-bytes N]]
        [--elastic] [--die-at STEP [--die-rank R]]

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

--elastic (start with distcomm-launch --keep-going) mirrors examples/train
--elastic: when a rank is lost, the others call Group.shrink(), take the
new rank 0's weights, Adam state, step and batch generator, cut each batch
among themselves and go on. --die-at STEP makes rank R (default 1) kill
itself as it starts step STEP, to show that.
"""
import argparse
import hashlib
import os
import signal
import sys
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


def pack_rng(rng):
    """The generator's state as 6 uint64, to broadcast (PCG64's 128-bit
    state and increment, and the cached half word)."""
    st = rng.bit_generator.state
    m = (1 << 64) - 1
    s, inc = st["state"]["state"], st["state"]["inc"]
    return np.array([s & m, s >> 64, inc & m, inc >> 64, st["has_uint32"],
                     st["uinteger"]], np.uint64)


def unpack_rng(rng, a):
    a = [int(v) for v in a]
    rng.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": a[0] | a[1] << 64, "inc": a[2] | a[3] << 64},
        "has_uint32": a[4], "uinteger": a[5]}


def recover(g, err, world_rank, members, state):
    """--elastic: an op on g failed (a peer lost). Shrinks to the survivors
    (again when another is lost meanwhile) and gives every survivor the new
    rank 0's state: state is (steps done, rng words, params, opt) and is updated
    in place. Returns the new group and its members' world ranks."""
    done, words, params, opt = state
    print(f"train.py: rank {g.rank()}: step {done + 1}: {err}; shrinking the group",
          file=sys.stderr, flush=True)
    for _ in range(len(members)):
        for tries in range(1, len(members) + 1):
            try:
                g = g.shrink()
                break
            except (distcomm.PeerLostError, distcomm.TimeoutError) as e:
                if tries == len(members):   # a survivor lost during it: again
                    raise SystemExit(f"train.py: rank {g.rank()}: shrink failed: {e}")
            except distcomm.Error as e:     # not supported, or left out
                raise SystemExit(f"train.py: rank {g.rank()}: shrink failed: {e}")
        try:
            left = [int(v) for v in distcomm.all_gather(np.array([world_rank], np.int32), group=g)]
            head = distcomm.broadcast(np.array([done, opt.t], np.int64), 0, group=g)
            words[...] = distcomm.broadcast(words, 0, group=g)
            for tree in [params, opt.m, opt.v]:
                for p in tree:
                    for k in p:
                        p[k][...] = distcomm.broadcast(p[k], 0, group=g)
            break
        except distcomm.Error as e:   # another rank lost: shrink this group
            print(f"train.py: rank {g.rank()}: sharing the state: {e}; shrinking again",
                  file=sys.stderr, flush=True)
    else:
        raise SystemExit(f"train.py: rank {g.rank()}: still losing ranks; giving up")
    opt.t = int(head[1])
    if g.rank() == 0:
        gone = " ".join(str(r) for r in members if r not in left)
        print(f"elastic: lost world rank {gone}; {g.size()} ranks go on from step "
              f"{int(head[0]) + 1}: {' '.join(map(str, left))} (world ranks)", flush=True)
    return g, left, int(head[0])


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
    ap.add_argument("--elastic", action="store_true",
                    help="go on without a lost rank (distcomm-launch --keep-going)")
    ap.add_argument("--die-at", type=int, default=0, metavar="STEP",
                    help="rank --die-rank kills itself as it starts this step")
    ap.add_argument("--die-rank", type=int, default=1, metavar="R")
    args = ap.parse_args()

    world = distcomm.init()
    rank, size = world.rank(), world.size()
    world_rank, members = rank, list(range(size))
    if args.die_at and args.die_rank >= size:
        if rank == 0:
            print(f"train.py: --die-rank {args.die_rank} is not one of the {size} ranks",
                  file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    x, y = spiral(6000, 3, rng)
    xtr, ytr, xte, yte = x[:4800], y[:4800], x[4800:], y[4800:]
    sizes = [2] + [args.hidden] * args.layers + [3]
    params = init_params(sizes, rng)
    opt = Adam(params, args.lr)
    nfloats = sum(v.size for p in params for v in p.values())

    def say(line):   # from rank 0 of the group of the moment
        if rank == 0:
            print(line, flush=args.elastic)
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
    g, step, redone = world, 1, None
    while step <= args.steps:
        if step == args.die_at and world_rank == args.die_rank:
            sys.stdout.flush()
            print(f"train.py: rank {rank}: --die-at {step}: killing myself (SIGKILL)",
                  file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        words = pack_rng(rng) if args.elastic else None  # this step's batch
        t_step, avg = time.perf_counter(), None
        try:
            idx = rng.integers(0, len(xtr), args.batch)       # same on every rank
            mine = np.array_split(idx, size)[rank]            # this rank's share
            # uneven shares (after a shrink): weigh each rank's mean so that
            # the average is the whole batch's mean
            scale = np.float32(len(mine) * size / args.batch)
            if args.overlap:
                # time in start/ready/wait is communication; what runs behind
                # backward is not
                t0 = time.perf_counter()
                avg = average_gradients(rev, group=g, all_reduce_size=bucket,
                                        overlap=True)
                comm += time.perf_counter() - t0

                def layer_done(i):
                    nonlocal comm
                    t = time.perf_counter()
                    j = len(params) - 1 - i
                    if scale != 1:
                        for v in bufs[i].values():
                            v *= scale
                    avg.ready(2 * j)
                    avg.ready(2 * j + 1)
                    comm += time.perf_counter() - t

                loss, grads = loss_and_grads(params, xtr[mine], ytr[mine], bufs, layer_done)
                t0 = time.perf_counter()
                avg, pending = None, avg
                pending.wait()
            else:
                loss, grads = loss_and_grads(params, xtr[mine], ytr[mine])
                if scale != 1:
                    grads = [{k: v * scale for k, v in p.items()} for p in grads]
                t0 = time.perf_counter()
                grads = average_gradients(grads, group=g, all_reduce_size=bucket)
            loss = distcomm.all_sum(loss * scale, group=g) / size
        except distcomm.Error as e:
            if not args.elastic:
                raise
            if avg is not None:   # a failed ready: the wait frees the rest
                try:
                    avg.wait()
                except distcomm.Error:
                    pass
            t_fail = time.perf_counter()
            g, members, done = recover(g, e, world_rank, members,
                                       (step - 1, words, params, opt))
            unpack_rng(rng, words)
            rank, size = g.rank(), g.size()
            step, redone = done + 1, (t_step, time.perf_counter() - t_fail)
            continue
        comm += time.perf_counter() - t0
        opt.update(params, grads)
        if redone and rank == 0:
            print(f"elastic: step {step} done on {size} ranks "
                  f"{time.perf_counter() - redone[0]:.3f} s after the failed step began "
                  f"(shrink and state {redone[1]:.3f} s)", flush=True)
        redone = None
        if step == 1 or step % 25 == 0 or step == args.steps:
            say(f"step {step:4d}  loss {float(loss):.6f}")
        step += 1
    elapsed = time.perf_counter() - start

    acc = (forward(params, xte)[-1].argmax(axis=1) == yte).mean()
    flat = np.concatenate([v.reshape(-1) for p in params for v in p.values()])
    same = np.array_equal(distcomm.all_max(flat, group=g), distcomm.all_min(flat, group=g))
    say(f"held-out accuracy {100 * acc:.2f}% ({len(yte)} points) | "
        f"{args.steps * args.batch / elapsed:.0f} samples/s | communication "
        f"{100 * comm / elapsed:.0f}% of step time")
    digest = hashlib.sha256(flat.tobytes()).hexdigest()[:16]
    say(f"weights {'identical' if same else 'DIFFER'} on all {size} ranks")
    say(f"weights sha256 {digest}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
