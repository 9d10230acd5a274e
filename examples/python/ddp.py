"""PyTorch DistributedDataParallel training on the "distcomm" backend.

    distcomm-launch -n 2 -- python3 examples/python/ddp.py [--steps 200]

An ordinary DDP script: the only distcomm-specific lines are the import
that registers the backend and the backend name (--backend gloo runs the
same script on Gloo, for comparison). Every rank builds the same spiral data
set, takes its share of every batch, and DDP averages the gradients. At the
end the ranks check that their parameters are bit-identical.
"""
import argparse
import math
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import distcomm.torch  # noqa: F401  (registers the "distcomm" backend)


def spiral(n, arms, gen):
    """n points on `arms` noisy spiral arms in the plane, labelled by arm."""
    y = torch.randint(0, arms, (n,), generator=gen)
    t = torch.rand(n, generator=gen) * 0.95 + 0.05
    angle = 4.0 * t + 2 * math.pi * y / arms + torch.randn(n, generator=gen) * 0.2
    return torch.stack([t * torch.cos(angle), t * torch.sin(angle)], dim=1), y


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="distcomm")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=256, help="global batch, split over ranks")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2, help="hidden layers")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    x, y = spiral(6000, 3, gen)
    x_test, y_test = x[4800:], y[4800:]
    layers, width = [], 2
    for _ in range(args.layers):
        layers += [nn.Linear(width, args.hidden), nn.ReLU()]
        width = args.hidden
    model = nn.Sequential(*layers, nn.Linear(width, 3))
    ddp = DDP(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    n_params = sum(p.numel() for p in model.parameters())
    share = args.batch // world
    if rank == 0:
        print(f"ddp.py: {world} ranks (backend {dist.get_backend()}), MLP 2-"
              + "-".join([str(args.hidden)] * args.layers)
              + f"-3 ({n_params} parameters), batch {args.batch} ({share} per rank), "
              f"Adam lr {args.lr}, {args.steps} steps", flush=True)

    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, 4800, (args.batch,), generator=gen)
        mine = idx[rank * share:(rank + 1) * share]
        opt.zero_grad()
        loss = loss_fn(ddp(x[mine]), y[mine])
        loss.backward()
        opt.step()
        if rank == 0 and (step == 1 or step % 50 == 0 or step == args.steps):
            print(f"step {step:4d}  loss {loss.item():.6f}", flush=True)
    elapsed = time.perf_counter() - start

    with torch.no_grad():
        accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    every = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(every, flat)
    same = all(torch.equal(e, every[0]) for e in every)
    if rank == 0:
        print(f"held-out accuracy {100 * accuracy:.2f}% | {1e3 * elapsed / args.steps:.3f} ms "
              f"per step | {args.steps * args.batch / elapsed:.0f} samples/s")
        print(f"parameters identical on all {world} ranks" if same else
              f"parameters DIFFER between the {world} ranks", flush=True)
    dist.destroy_process_group()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
