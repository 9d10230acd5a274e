"""One worker of torchrun_restart.sh: 8 steps of an all_reduce into w, rank 0
saving (step, w) after each; in torchrun's first attempt rank 1 kills itself
with SIGKILL at step 3. The survivor's all_reduce fails (distcomm names the
lost peer), torchrun restarts both, and they go on from the checkpoint:
w ends at 8 * (1 + 2) = 24 on both."""
import os
import signal
import sys

import torch
import torch.distributed as dist

import distcomm.torch  # noqa: F401

STEPS = 8
ckpt = sys.argv[1]
dist.init_process_group("distcomm")
rank = dist.get_rank()
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
start, w = 0, torch.zeros(4)
if os.path.exists(ckpt):
    saved = torch.load(ckpt)
    start, w = saved["step"], saved["w"]
    os.write(1, f"rank {rank} attempt {attempt}: resumed at step {start}\n".encode())
for step in range(start, STEPS):
    if attempt == 0 and step == 3 and rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    g = torch.ones(4) * (rank + 1)
    dist.all_reduce(g)
    w += g
    if rank == 0:
        torch.save({"step": step + 1, "w": w}, ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)
    dist.barrier()  # the checkpoint is there before anyone goes on
os.write(1, f"rank {rank} attempt {attempt}: done, w {w.tolist()}\n".encode())  # one write: see torchrun_worker.py
dist.destroy_process_group()
