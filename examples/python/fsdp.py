"""FSDP2 (torch 2's fully_shard) on the "distcomm" backend, checked against Gloo.

    distcomm-launch -n 2 -- python3 examples/python/fsdp.py [--steps 50]

Each rank holds 1/N of every parameter; forward gathers a layer's
parameters (all_gather), backward reduce-scatters its gradients. The same
training runs twice, on a DeviceMesh over the "distcomm" group and on one
over a Gloo group of the same ranks, a step of each in turn, and the ranks
check that the two give the same parameters (allclose: the two backends may
add in another order). The times are medians per step, wall and CPU.
Needs torch 2 (on CPU).
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import fully_shard

import distcomm.torch  # noqa: F401  (registers the "distcomm" backend)


def sharded(mesh, args):
    """The model, fully_shard-ed per Linear and at the root, and its optimizer."""
    torch.manual_seed(args.seed)
    layers = []
    for _ in range(args.layers):
        layers += [nn.Linear(args.width, args.width), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(args.width, 1))
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


def step(model, opt, x):
    loss = (model(x) - x.sum(1, keepdim=True).sin()).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def train(meshes, args, rank):
    """The same training on each mesh, one step on each in turn (a slow
    spell of the host falls on both; timed one after the other, whichever
    ran during a burst of the other jobs on the host looked several times
    slower). Returns each one's final parameters, last loss, median wall
    time and median CPU time (all threads) of a step, the first step (FSDP's
    lazy set-up) left out."""
    runs = [sharded(mesh, args) for mesh in meshes]
    gen = torch.Generator().manual_seed(args.seed + 1 + rank)  # each rank its batch
    wall, cpu, losses = [[] for _ in runs], [[] for _ in runs], [None] * len(runs)
    for _ in range(args.steps + 1):
        x = torch.randn(args.batch, args.width, generator=gen)
        for i, (model, opt) in enumerate(runs):
            t0, c0 = time.perf_counter(), time.process_time()
            losses[i] = step(model, opt, x)
            wall[i].append(time.perf_counter() - t0)
            cpu[i].append(time.process_time() - c0)
    return [([p.full_tensor().detach() for p in model.parameters()], losses[i].item(),
             statistics.median(wall[i][1:]), statistics.median(cpu[i][1:]))
            for i, (model, _) in enumerate(runs)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32, help="per rank")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dist.init_process_group("distcomm")
    rank, world = dist.get_rank(), dist.get_world_size()
    gloo_mesh = DeviceMesh.from_group(dist.new_group(backend="gloo"), "cpu")
    (ours, loss, t_ours, c_ours), (theirs, _, t_gloo, c_gloo) = train(
        [init_device_mesh("cpu", (world,)), gloo_mesh], args, rank)
    same = all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(ours, theirs))
    if rank == 0:
        n = sum(p.numel() for p in ours)
        print(f"fsdp.py: {world} ranks, {n} parameters sharded over the mesh, "
              f"{args.steps} steps: final loss {loss:.6f}; {1e3 * t_ours:.2f} ms per step, "
              f"{1e3 * c_ours:.2f} ms of CPU (Gloo {1e3 * t_gloo:.2f} ms, "
              f"{1e3 * c_gloo:.2f} ms of CPU; medians, steps in turns)")
    print("parameters match Gloo's on all" if same else "parameters DIFFER from Gloo's on",
          f"{world} ranks" if same else f"rank {rank}", flush=True)
    dist.destroy_process_group()
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
