"""Ray Train on the "distcomm" backend: TorchTrainer, TorchConfig(backend="distcomm").

    pip install "ray[train]"
    python3 examples/python/ray_train.py [--workers 2] [--steps 20] [--out DIR]

Ray starts the training workers and calls dist.init_process_group(backend=
"distcomm", init_method="tcp://...") in each of them (TorchConfig), so the
backend must be registered in every worker process before that: Ray's
runtime_env "worker_process_setup_hook" runs distcomm.torch.register in
each worker as it starts. Nothing else is distcomm's: the rendezvous goes
through the store torch makes from Ray's tcp:// address (no hostfile, no
extra port). A short DDP training on CPU; at the end each worker checks that
its parameters equal the others' and, with --out, writes them to DIR.
"""
import argparse
import json
import os

import ray
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer


def train_loop(config):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # the same start on every worker
    model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(),
                                    torch.nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(64 * world, 4, generator=gen)
    y = x.sum(dim=1, keepdim=True).sin()
    mine = slice(rank * 64, (rank + 1) * 64)  # this worker's share
    first = last = None
    for _ in range(config["steps"]):
        loss = torch.nn.functional.mse_loss(model(x[mine]), y[mine])
        opt.zero_grad()
        loss.backward()  # DDP all_reduces the gradients on distcomm
        opt.step()
        first = loss.item() if first is None else first
        last = loss.item()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    same = all(torch.equal(g, flat) for g in gathered)
    result = {"rank": rank, "world": world, "backend": dist.get_backend(),
              "same_parameters": same, "first_loss": first, "last_loss": last,
              "param_sum": flat.sum().item()}
    if config["out"]:
        with open(os.path.join(config["out"], f"worker{rank}.json"), "w") as f:
            json.dump(result, f)
    print(f"worker {rank} of {world} on {result['backend']}: loss {first:.4f} -> "
          f"{last:.4f}, parameters {'equal' if same else 'DIFFER'} on all workers",
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out", default="", help="a folder for each worker's result")
    args = ap.parse_args()
    # Each worker registers the backend as it starts, before Ray's
    # init_process_group; the workers run with one CPU each.
    ray.init(num_cpus=args.workers, include_dashboard=False,
             runtime_env={"worker_process_setup_hook": "distcomm.torch.register"})
    trainer = TorchTrainer(
        train_loop,
        train_loop_config={"steps": args.steps, "out": os.path.abspath(args.out) if args.out else ""},
        scaling_config=ScalingConfig(num_workers=args.workers, use_gpu=False),
        torch_config=TorchConfig(backend="distcomm"),
        run_config=RunConfig(name="distcomm_ray_train", storage_path=os.path.abspath(
            os.environ.get("RAY_TRAIN_STORAGE", "/tmp/distcomm_ray_train"))))
    trainer.fit()
    ray.shutdown()


if __name__ == "__main__":
    main()
