"""torch.distributed on "distcomm" against "gloo", in one job and in turns.

    distcomm-launch -n 2 -- env PYTHONPATH=build/python python3 bench/torch/torch_bench.py
    DISTCOMM_SHM=0 distcomm-launch -n 2 -- ...   # distcomm over TCP (Gloo always is)

The default group is distcomm's; a Gloo group over the same ranks comes from
new_group(backend="gloo"). For each size, ROUNDS rounds each time distcomm
then Gloo (so a slow spell of the host falls on both) and the table gives
each side's median: dist.all_reduce of float32 (8 B to --max-mib), then a
DDP training step (forward, backward with DDP's bucketed all_reduce,
SGD step) of an MLP big enough for communication to show, the four kinds
of step (distcomm, distcomm blocking, Gloo, no DDP) taken in turns one at a
time. "blocking" is distcomm with every op run to completion on the calling
thread (ProcessGroupDistcomm.inline_bytes set past any size: no overlap of
DDP's all_reduce with backward, the backend before its Work was backed by
requests). Then (torch 2) an FSDP2 step (fully_shard per Linear, SGD)
on a mesh over each group, in turns with the model's unsharded step
without communication, with CPU time per step beside the wall time (CPU
time hardly moves with the host's load; wall time does). The all_reduce table gives dist.all_reduce (async_op=False: run
on the calling thread) and dist.all_reduce(async_op=True).wait() (a request
on the progress thread, waited for at once: the cost of the hand-off). Rank 0 prints the
table and the host's copy rate (torch copy_ of 256 MiB, read + write).
"""
import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import distcomm.torch


class blocking:
    """Every distcomm op on the calling thread while inside."""

    def __enter__(self):
        self.was = distcomm.torch.ProcessGroupDistcomm.inline_bytes
        distcomm.torch.ProcessGroupDistcomm.inline_bytes = 1 << 62

    def __exit__(self, *exc):
        distcomm.torch.ProcessGroupDistcomm.inline_bytes = self.was


def timed(fn, iters):
    fn()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t0) / iters


def all_reduce_table(gloo, rounds, max_bytes, rank):
    sizes, size = [], 8
    while size <= max_bytes:
        sizes.append(size)
        size *= 8 if size < 1 << 18 else 4  # 8 B, 64 B, ... 256 KiB, 1, 4, 16 MiB
    if sizes[-1] < max_bytes:  # --max-mib itself, e.g. 128 MiB after 64
        sizes.append(max_bytes)
    rows = []
    for size in sizes:
        t = torch.ones(size // 4)
        iters = max(5, min(2000, int(2e8 // (size * 8 + 2e5))))
        ours, inline, theirs = [], [], []
        for _ in range(rounds):
            ours.append(timed(lambda: dist.all_reduce(t), iters))
            inline.append(timed(lambda: dist.all_reduce(t, async_op=True).wait(), iters))
            theirs.append(timed(lambda: dist.all_reduce(t, group=gloo), iters))
        rows.append((size, statistics.median(ours), statistics.median(inline),
                     statistics.median(theirs)))
    if rank == 0:
        print("all_reduce float32 sum")
        print(f"async: async_op=True then wait() (inline_bytes "
              f"{distcomm.torch.ProcessGroupDistcomm.inline_bytes}: larger ops are requests)")
        print(f"{'bytes':>10} {'distcomm_us':>12} {'async_us':>12} {'gloo_us':>10}"
              f" {'gloo/distcomm':>14} {'distcomm_GB/s':>14}")
        for size, a, i, b in rows:
            print(f"{size:>10} {a * 1e6:>12.1f} {i * 1e6:>12.1f} {b * 1e6:>10.1f}"
                  f" {b / a:>13.2f}x {size / a / 1e9:>14.3f}", flush=True)


def gloo_shm_check(gloo, rank):
    """Whether Gloo's shared-memory all_reduce (gloo#458: taken when
    LOCAL_WORLD_SIZE is set) can be and was used: the variable, whether
    libtorch_cpu holds the code that reads it (its getenv's string), and the
    /dev/shm files that appear during Gloo all_reduces of 1 MiB."""
    lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    with open(lib, "rb") as f:
        has = b"LOCAL_WORLD_SIZE" in f.read()
    before = set(os.listdir("/dev/shm"))
    t = torch.ones(1 << 18)
    for _ in range(20):
        dist.all_reduce(t, group=gloo)
    during = set(os.listdir("/dev/shm")) - before
    dist.barrier()
    if rank == 0:
        print(f"gloo shm path: LOCAL_WORLD_SIZE={os.environ.get('LOCAL_WORLD_SIZE')}; "
              f"torch {torch.__version__}'s libtorch_cpu names it: {'yes' if has else 'no'}; "
              f"new /dev/shm files during Gloo all_reduces: {sorted(during) or 'none'}", flush=True)


def ddp_step_table(gloo, rounds, hidden, layers, batch, steps, rank, world):
    def model():
        torch.manual_seed(0)
        mods, width = [], 64
        for _ in range(layers):
            mods += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        return nn.Sequential(*mods, nn.Linear(width, 10))

    runs = {}
    for name, group in (("distcomm", None), ("gloo", gloo)):
        m = DDP(model(), process_group=group)
        runs[name] = (m, torch.optim.SGD(m.parameters(), lr=0.01))
    x, y = torch.randn(batch // world, 64), torch.randint(0, 10, (batch // world,))

    def step(name):
        m, opt = runs[name]
        opt.zero_grad()
        nn.functional.cross_entropy(m(x), y).backward()
        opt.step()

    def compute_only():  # the same step without DDP: the compute share
        m = runs["distcomm"][0].module
        nn.functional.cross_entropy(m(x), y).backward()

    # one step of each in turn, each timed alone after a barrier, so that a
    # slow spell of the host or a rank running late falls on all three alike
    def step_blocking():
        with blocking():
            step("distcomm")

    times = {"distcomm": [], "blocking": [], "gloo": [], "compute": []}
    fns = {"distcomm": lambda: step("distcomm"), "blocking": step_blocking,
           "gloo": lambda: step("gloo"), "compute": compute_only}
    for name, fn in fns.items():
        fn()  # warm-up (DDP rebuilds its buckets after the first step)
        fn()
    for _ in range(rounds * steps):
        for name, fn in fns.items():
            dist.barrier()
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    if rank == 0:
        n = sum(p.numel() for p in runs["distcomm"][0].parameters())
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"DDP step: MLP 64-{hidden}x{layers}-10, {n} parameters "
              f"({n * 4 / 2**20:.1f} MiB of gradients), batch {batch} ({batch // world} per rank)")
        print(f"  distcomm {med['distcomm'] * 1e3:.2f} ms | distcomm blocking "
              f"{med['blocking'] * 1e3:.2f} ms | gloo {med['gloo'] * 1e3:.2f} ms | "
              f"gloo/distcomm {med['gloo'] / med['distcomm']:.2f}x | blocking/distcomm "
              f"{med['blocking'] / med['distcomm']:.2f}x | forward+backward "
              f"alone {med['compute'] * 1e3:.2f} ms", flush=True)


def fsdp_step_table(gloo, rounds, width, layers, batch, steps, rank, world):
    """FSDP2 (fully_shard per Linear and on the root) training steps on a
    DeviceMesh over the distcomm world and over the Gloo group, taken in
    turns one step at a time, beside the same model's step unsharded and
    without communication (the compute share)."""
    from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
    from torch.distributed.fsdp import fully_shard

    def model():
        torch.manual_seed(0)
        mods = []
        for _ in range(layers):
            mods += [nn.Linear(width, width), nn.ReLU()]
        return nn.Sequential(*mods, nn.Linear(width, 10))

    def sharded(mesh):
        m = model()
        for layer in m:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=mesh)
        fully_shard(m, mesh=mesh)
        return m, torch.optim.SGD(m.parameters(), lr=0.01)

    runs = {"distcomm": sharded(init_device_mesh("cpu", (world,))),
            "gloo": sharded(DeviceMesh.from_group(gloo, "cpu"))}
    plain = model()
    x, y = torch.randn(batch // world, width), torch.randint(0, 10, (batch // world,))

    def step(name):
        m, opt = runs[name]
        opt.zero_grad()
        nn.functional.cross_entropy(m(x), y).backward()
        opt.step()

    def compute_only():  # forward and backward of the whole model, no communication
        nn.functional.cross_entropy(plain(x), y).backward()

    fns = {"distcomm": lambda: step("distcomm"), "gloo": lambda: step("gloo"),
           "compute": compute_only}
    times, cpu = {k: [] for k in fns}, {k: [] for k in fns}
    for fn in fns.values():
        fn()
        fn()
    for _ in range(rounds * steps):
        for name, fn in fns.items():
            dist.barrier()
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    if rank == 0:
        n = sum(p.numel() for p in plain.parameters())
        med = {k: statistics.median(v) for k, v in times.items()}
        mcpu = {k: statistics.median(v) for k, v in cpu.items()}
        comm = 1 - med["compute"] / med["gloo"]
        print(f"FSDP2 step: fully_shard per Linear, MLP {width}x{layers}-10, {n} parameters "
              f"({n * 4 / 2**20:.1f} MiB), batch {batch} ({batch // world} per rank); "
              f"communication {100 * comm:.0f}% of Gloo's step")
        print(f"  distcomm {med['distcomm'] * 1e3:.2f} ms | gloo {med['gloo'] * 1e3:.2f} ms | "
              f"gloo/distcomm {med['gloo'] / med['distcomm']:.2f}x | forward+backward "
              f"unsharded {med['compute'] * 1e3:.2f} ms", flush=True)
        print(f"  CPU per step (rank 0, all threads): distcomm {mcpu['distcomm'] * 1e3:.2f} ms | "
              f"gloo {mcpu['gloo'] * 1e3:.2f} ms | unsharded {mcpu['compute'] * 1e3:.2f} ms",
              flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-mib", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=10, help="DDP steps per round")
    ap.add_argument("--fsdp-width", type=int, default=1024)
    ap.add_argument("--fsdp-layers", type=int, default=4)
    ap.add_argument("--fsdp-batch", type=int, default=64)
    ap.add_argument("--only", choices=["all_reduce", "ddp", "fsdp"], help="one table only")
    args = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("distcomm")
    rank, world = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    if rank == 0:
        src, dst = torch.ones(64 << 20), torch.empty(64 << 20)
        dst.copy_(src)
        t0 = time.perf_counter()
        for _ in range(5):
            dst.copy_(src)
        rate = 5 * 2 * src.numel() * 4 / (time.perf_counter() - t0) / 1e9
        link = "TCP" if os.environ.get("DISTCOMM_SHM") == "0" else "shared memory"
        print(f"{world} ranks, torch {torch.__version__}, distcomm over {link} (Gloo: TCP, "
              f"and its shared-memory all_reduce where built in, see below); "
              f"host copy rate {rate:.1f} GB/s (read + write); median of {args.rounds} rounds",
              flush=True)
    gloo_shm_check(gloo, rank)
    if args.only in (None, "all_reduce"):
        all_reduce_table(gloo, args.rounds, args.max_mib << 20, rank)
    if args.only in (None, "ddp"):
        ddp_step_table(gloo, args.rounds, args.hidden, args.layers, args.batch, args.steps,
                       rank, world)
    if args.only in (None, "fsdp") and not distcomm.torch._TORCH1:
        fsdp_step_table(gloo, args.rounds, args.fsdp_width, args.fsdp_layers,
                        args.fsdp_batch, args.steps, rank, world)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
