"""One rank of tests/python/torch2_shrink.sh: DDP training on the distcomm
backend; rank 1 kills itself at step 3. The survivors catch the error,
shrink a subgroup made before (new_group) and all_reduce on it, name the
wrong rank to shrink_group (a MismatchError that names the lost ones),
then call torch.distributed.shrink_group([1]) and check the new default
group: its size and ranks, an all_reduce (small: inline, and large: async), a
DDP step whose parameters equal a local reference computed from both
survivors' batches and match on both, and a DeviceMesh over it."""
import copy
import os
import signal
import time

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.nn.parallel import DistributedDataParallel as DDP

import distcomm
import distcomm.torch  # noqa: F401  (registers the backend)

LOST, KILL_AT = 1, 3


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(16, 8, generator=g), torch.randn(16, 4, generator=g)


def sgd_step(model, opt, x, y):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()


def train_until_lost(model, me):
    ddp = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(1000):
        if me == LOST and step == KILL_AT:
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            sgd_step(ddp, opt, *batch(me, step))
        except Exception as e:  # noqa: BLE001  (the lost rank, via DDP)
            first = str(e).strip().splitlines()[-1][:160]
            print(f"rank {me}: lost a rank at step {step}: {type(e).__name__}: {first}",
                  flush=True)
            return time.monotonic()
    raise SystemExit(f"rank {me}: FAIL no lost rank seen")


def reference(model, old_ranks, step):
    """The parameters after one SGD step on the mean of the survivors'
    gradients (what DDP on the shrunk group must give)."""
    ref = copy.deepcopy(model)
    grads = []
    for r in old_ranks:
        m = copy.deepcopy(model)
        x, y = batch(r, step)
        torch.nn.functional.mse_loss(m(x), y).backward()
        grads.append([p.grad for p in m.parameters()])
    with torch.no_grad():
        for i, p in enumerate(ref.parameters()):
            p -= 0.1 * sum(g[i] for g in grads) / len(grads)
    return ref


def main():
    dist.init_process_group("distcomm")
    me = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4)
    sub = dist.new_group([0, 1, 2])  # a subgroup (a split), shrunk first
    lost_at = train_until_lost(model, me)
    sub = dist.shrink_group([LOST], group=sub)
    t = torch.full((3,), float(me + 1))
    dist.all_reduce(t, group=sub)
    print(f"rank {me}: from the error to the shrunk subgroup's first all_reduce: "
          f"{time.monotonic() - lost_at:.3f} s", flush=True)
    sub_ok = (sub.size() == 2 and dist.get_group_rank(sub, me) == me - (me > LOST)
              and bool((t == 4).all()) and dist.get_world_size() == 3)
    try:  # a wrong rank named (the other survivor): a clear error, no hang
        dist.shrink_group([2 - me])
        raise SystemExit(f"rank {me}: FAIL shrink_group([{2 - me}]) did not raise")
    except distcomm.MismatchError as e:
        print(f"rank {me}: shrink_group([{2 - me}]): MismatchError: {e}", flush=True)
    pg = dist.shrink_group([LOST])
    checks = [("subgroup", sub_ok)]
    new_rank, size = dist.get_rank(), dist.get_world_size()
    checks.append(("size/rank", size == 2 and new_rank == me - (me > LOST)
                   and pg is dist.group.WORLD))
    small = torch.full((4,), float(me + 1))
    dist.all_reduce(small)
    print(f"rank {me}: from the error to the shrunk group's first all_reduce "
          f"(three shrinks): {time.monotonic() - lost_at:.3f} s", flush=True)
    big = torch.full((1 << 18,), float(me + 1))
    dist.all_reduce(big, async_op=True).wait()
    checks.append(("all_reduce", bool((small == 4).all()) and bool((big == 4).all())))
    ddp = DDP(model)  # broadcasts the new rank 0's parameters
    ref = reference(model, [0, 2], 100)
    sgd_step(ddp, torch.optim.SGD(model.parameters(), lr=0.1), *batch(me, 100))
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    every = [torch.empty_like(flat) for _ in range(size)]
    dist.all_gather(every, flat)
    want = torch.cat([p.detach().reshape(-1) for p in ref.parameters()])
    checks.append(("DDP step", torch.equal(every[0], every[1]) and
                   torch.allclose(flat, want, atol=1e-6)))
    mesh = init_device_mesh("cpu", (size,))
    t = torch.ones(2)
    dist.all_reduce(t, group=mesh.get_group())
    checks.append(("DeviceMesh", bool((t == 2).all())))
    bad = [name for name, ok in checks if not ok]
    print(f"rank {me}: shrunk to rank {new_rank} of {size}: subgroup, all_reduce, "
          f"DDP step, DeviceMesh: {'ok' if not bad else 'FAIL ' + ', '.join(bad)}", flush=True)
    dist.destroy_process_group()


main()
