"""A rank that goes away mid-run: after a few all_sums rank 1 either is
killed (SIGKILL; HOW=kill), leaves quietly with status 0 (HOW=exit) or
stops (SIGSTOP: alive, silent; HOW=stop),
while the others go on summing. The job must end, not hang: lost_rank.sh
checks the status, the time and the message naming rank 1."""
import os
import signal
import sys

import mlx.core as mx

world = mx.distributed.init(strict=True, backend="mpi")
how = sys.argv[1]
x = mx.ones((1 << 16,))
for i in range(1000):
    if i == 3 and world.rank() == 1:
        print("rank 1 leaves", flush=True)
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if how == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        os._exit(0)
    mx.eval(mx.distributed.all_sum(x))
print(f"rank {world.rank()} finished 1000 all_sums: the loss went unseen", flush=True)
