"""One worker under torch 2's torchrun (torchrun_local.sh): the "distcomm"
backend from torchrun's variables and its store alone; prints its rank and
an all_reduce of (rank + 1)."""
import os, torch, torch.distributed as dist
import distcomm.torch
dist.init_process_group("distcomm")
t = torch.ones(4) * (dist.get_rank() + 1)
dist.all_reduce(t)
# One write per line: the node's two workers share one output file, and
# torchrun runs them unbuffered, where print() writes each word alone (CI
# caught "rankrank 0  1of  of4 ...").
line = (f"rank {dist.get_rank()} of {dist.get_world_size()} local "
        f"{os.environ['LOCAL_RANK']} {t.tolist()}\n")
os.write(1, line.encode())
dist.destroy_process_group()
