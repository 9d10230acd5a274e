"""One rank of tests/python/shrink.sh: all_sums of (rank + 1); rank 1
kills itself after two; the others catch the error, call Group.shrink()
and check the new group's size, rank and sum."""
import os
import signal

import numpy as np

import distcomm

world = distcomm.init(strict=True, backend="ring")
me, n = world.rank(), world.size()
x = np.full(1024, me + 1, np.float32)
try:
    for i in range(1000):
        if me == 1 and i == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        distcomm.all_sum(x, group=world)
    print(f"rank {me}: FAIL no loss seen", flush=True)
except distcomm.Error as e:
    print(f"rank {me}: lost a rank: {e}", flush=True)
survivors = world.shrink()
want = n * (n + 1) / 2 - 2
got = distcomm.all_sum(x, group=survivors)
ok = (survivors.size() == n - 1 and survivors.rank() == me - (me > 1)
      and bool(np.all(np.asarray(got) == want)))
print(f"rank {me}: shrunk to rank {survivors.rank()} of {survivors.size()}, "
      f"sum {float(np.asarray(got)[0])}: {'ok' if ok else 'FAIL'}", flush=True)
