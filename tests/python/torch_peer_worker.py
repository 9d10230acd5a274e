"""One rank of a job of two started by torch_errors.py without the launcher:
init_process_group("distcomm") from MLX_RANK and MLX_HOSTFILE, two DDP steps
(DDP rebuilds its buckets at the second), "ready"; then rank 1 sleeps (the test kills it) and rank 0 takes another
step (argv[1] == "ddp"; "ddp_async" with every op a background request,
inline_bytes -1; "ddp_hook" the same through torch's Python allreduce_hook), all_reduces (argv[1] == "all_reduce") or starts three
all_reduces with async_op=True, prints "issued", then waits on each
(argv[1] == "async"), and prints the exception(s) it got. With argv[1] == "hello" each rank prints its rank,
the world size and an all_reduce of ones, and exits; with "gloo_default"
the default group is Gloo's and each rank prints what new_group(backend=
"distcomm") raised."""
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import distcomm.torch

if sys.argv[1] == "gloo_default":
    dist.init_process_group("gloo")  # the store still comes from distcomm.torch
    try:
        dist.new_group(backend="distcomm")
        print("no error", flush=True)
    except Exception as e:  # noqa: BLE001
        print(type(e).__name__, e, flush=True)
    sys.exit(0)
dist.init_process_group("distcomm")
if sys.argv[1] in ("ddp_async", "ddp_hook"):
    distcomm.torch.ProcessGroupDistcomm.inline_bytes = -1
if sys.argv[1] == "hello":
    t = torch.ones(1)
    dist.all_reduce(t)
    print(dist.get_rank(), dist.get_world_size(), int(t[0]), flush=True)
    sys.exit(0)
model = DDP(torch.nn.Linear(4, 2))
if sys.argv[1] == "ddp_hook":  # torch's Python hook: all_reduce(async_op=True).get_future()
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
    model.register_comm_hook(None, allreduce_hook)
for _ in range(2):
    model(torch.ones(3, 4)).sum().backward()
print("ready", flush=True)
if dist.get_rank() == 1:
    time.sleep(60)
else:
    try:
        if sys.argv[1] == "async":
            works = [dist.all_reduce(torch.ones(1 << 18), async_op=True) for _ in range(3)]
            print("issued", flush=True)
            for w in works:
                try:
                    w.wait()
                    print("no error", flush=True)
                except Exception as e:  # noqa: BLE001
                    print(type(e).__name__, " ".join(str(e).split()), flush=True)
            sys.exit(0)
        if sys.argv[1].startswith("ddp"):
            loss = model(torch.ones(3, 4)).sum()
            print("forward done", flush=True)
            loss.backward()  # DDP's all_reduce fails inside autograd
        else:
            dist.all_reduce(torch.ones(1 << 20))
        print("no error", flush=True)
    except Exception as e:  # noqa: BLE001  (the type is what the test checks)
        print(type(e).__name__, " ".join(str(e).split()), flush=True)
