"""One worker under torch 2's torchrun (torchrun_local.sh): the "distcomm"
backend from torchrun's variables and its store alone; prints its rank and
an all_reduce of (rank + 1)."""
import os, torch, torch.distributed as dist
import distcomm.torch
dist.init_process_group("distcomm")
t = torch.ones(4) * (dist.get_rank() + 1)
dist.all_reduce(t)
print("rank", dist.get_rank(), "of", dist.get_world_size(), "local", os.environ["LOCAL_RANK"], t.tolist(), flush=True)
dist.destroy_process_group()
