"""One rank of a job of two started by test_overlap.py without the
launcher: both start an overlapped average_gradients and say "ready";
rank 1 then sleeps (the test kills it) while rank 0 marks every array ready
and waits, and prints the exception it got."""
import time

import numpy as np

import distcomm
from distcomm.nn import average_gradients

world = distcomm.init(strict=True, backend="ring")
grads = [np.ones(1 << 18, np.float32) for _ in range(4)]
avg = average_gradients(grads, all_reduce_size=1 << 20, overlap=True)
print("ready", flush=True)
if world.rank() == 1:
    time.sleep(60)
else:
    try:
        for i in range(len(grads)):
            avg.ready(i)
        avg.wait()
        print("no error", flush=True)
    except distcomm.Error as e:
        print(type(e).__name__, e.status, e, flush=True)
