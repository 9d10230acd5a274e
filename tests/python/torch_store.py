"""The store that distcomm.torch gives torch.distributed (env:// under
distcomm-launch) listens only on the job's address: no listening socket of
a rank is bound to a wildcard address (issue 33, L3: torch 1.13's TCPStore
bound *:port on rank 0 whatever address it was given)."""
import os

import torch_common as tc

WILDCARDS = {"00000000", "00000000000000000000000000000000"}


def listening(path):
    """(local address hex, port) of each listening socket in /proc/net/tcp*,
    by inode."""
    out = {}
    with open(path) as f:
        next(f)
        for line in f:
            cols = line.split()
            if cols[3] == "0A":  # TCP_LISTEN
                addr, port = cols[1].split(":")
                out[cols[9]] = (addr, int(port, 16))
    return out


def my_listeners():
    socks = {}
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        socks.update(listening(path))
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            mine.add(target[8:-1])
    return [socks[i] for i in mine if i in socks]


def test_store_not_on_every_interface():
    tc.dist.barrier()
    wild = [port for addr, port in my_listeners() if addr in WILDCARDS]
    assert not wild, f"rank {tc.RANK} listens on every interface on ports {wild}"


def test_store_works():
    if tc.RANK != 0:
        return
    store = tc.dist.distributed_c10d._get_default_store()
    store.set("torch_store_probe", "1")  # the store works
    assert store.get("torch_store_probe") == b"1"
    assert my_listeners(), "rank 0 has no listening socket (the store's)"
