"""An ordinary torch script, as under torchrun: no distcomm import, Gloo,
init_method env:// (the default). Under distcomm-launch it must find
torchrun's variables (issue 35); prints them and an all_reduce."""
import os

import torch
import torch.distributed as dist

names = ["MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"]
missing = [n for n in names if n not in os.environ]
if missing:
    raise SystemExit(f"torch_env_gloo.py: not set: {', '.join(missing)}")
dist.init_process_group("gloo")
t = torch.ones(3) * (dist.get_rank() + 1)
dist.all_reduce(t)
print(f"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']} local "
      f"{os.environ['LOCAL_RANK']} of {os.environ['LOCAL_WORLD_SIZE']}: "
      f"all_reduce {t.tolist()}", flush=True)
dist.destroy_process_group()
