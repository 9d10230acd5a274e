"""One rank of a job of two started by test_errors.py without the launcher:
both all_sum once and say "ready"; then rank 0 waits for a message from
rank 1, which the test kills, and prints the exception it got."""
import time

import numpy as np

import distcomm

world = distcomm.init(strict=True, backend="ring")
distcomm.all_sum(np.ones(4, np.float32))
print("ready", flush=True)
if world.rank() == 1:
    time.sleep(60)
else:
    try:
        distcomm.recv(4, np.float32, 1)
        print("no error", flush=True)
    except distcomm.Error as e:
        print(type(e).__name__, e.status, e, flush=True)
