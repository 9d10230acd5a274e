"""An ordinary torch script, as under torchrun: init_method env:// (the
default), Gloo and no distcomm import, or with the argument "distcomm" that
backend (imported as a user would). Under distcomm-launch it must find
torchrun's variables (issue 35), on this host and on others; prints them
and an all_reduce."""
import os
import sys

import torch
import torch.distributed as dist

backend = sys.argv[1] if len(sys.argv) > 1 else "gloo"
names = ["MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"]
missing = [n for n in names if n not in os.environ]
if missing:
    raise SystemExit(f"torch_env_gloo.py: not set: {', '.join(missing)}")
if backend == "distcomm":
    import distcomm.torch  # noqa: F401 (registers the backend)
dist.init_process_group(backend)
t = torch.ones(3) * (dist.get_rank() + 1)
dist.all_reduce(t)
print(f"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']} local "
      f"{os.environ['LOCAL_RANK']} of {os.environ['LOCAL_WORLD_SIZE']}: "
      f"all_reduce {t.tolist()}", flush=True)
print(f"rank {os.environ['RANK']} master {os.environ['MASTER_ADDR']}:"
      f"{os.environ['MASTER_PORT']} backend {dist.get_backend()}", flush=True)
dist.destroy_process_group()
