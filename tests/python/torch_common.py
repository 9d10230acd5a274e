"""The torch tests' one process group (a process initialises torch.distributed
once): "distcomm" as the default group, and a Gloo group over the same ranks
to compare with. Skips the importing module when torch is missing."""
import datetime

import pytest

torch = pytest.importorskip("torch", reason="python3-torch is not installed")
import torch.distributed as dist  # noqa: E402

import distcomm.torch  # noqa: E402,F401

torch.set_num_threads(1)  # the ranks share the cores
if not dist.is_initialized():
    dist.init_process_group("distcomm", timeout=datetime.timedelta(seconds=60))
RANK, SIZE = dist.get_rank(), dist.get_world_size()
GLOO = dist.new_group(backend="gloo")
