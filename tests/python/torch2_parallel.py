"""torch 2's parallelism on the "distcomm" backend, each compared with the
same run on Gloo (a DeviceMesh made from Gloo groups over the same ranks):
FSDP2 (fully_shard), DTensor tensor parallelism (parallelize_module with
ColwiseParallel/RowwiseParallel) and a 2-D DeviceMesh (data x tensor: FSDP2
over TP). Run on every rank under distcomm-launch (2 and 4 ranks); skips
without torch 2."""
import time

import pytest

from torch_common import GLOO, RANK, SIZE, dist, torch  # skips without torch

import distcomm  # noqa: E402

if torch.__version__.startswith("1."):
    pytest.skip("FSDP2 and DTensor need torch 2", allow_module_level=True)

from torch import nn  # noqa: E402
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh  # noqa: E402
from torch.distributed.fsdp import fully_shard  # noqa: E402
from torch.distributed.tensor.parallel import (  # noqa: E402
    ColwiseParallel, RowwiseParallel, parallelize_module)

STEPS = 3


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 6))


def train(m, seed_of_step):
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for step in range(STEPS):
        g = torch.Generator().manual_seed(seed_of_step(step))
        x = torch.randn(4, 8, generator=g)
        m(x).pow(2).sum().backward()
        opt.step()
        opt.zero_grad()
    # full_tensor(): an all_gather over the mesh, the same on every rank
    return [p.full_tensor().detach().clone() for p in m.parameters()]


def fsdp(mesh):
    m = model()
    for layer in (m[0], m[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(m, mesh=mesh)
    return train(m, lambda step: 100 * step + RANK)  # each rank its own batch


def tp(mesh):
    m = parallelize_module(model(), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    return train(m, lambda step: 100 * step)  # TP: one batch on every rank


def two_d(mesh):
    m = parallelize_module(model(), mesh["tp"],
                           {"0": ColwiseParallel(), "2": RowwiseParallel()})
    fully_shard(m, mesh=mesh["dp"])
    dp = mesh["dp"].get_local_rank()
    return train(m, lambda step: 100 * step + dp)  # one batch per TP group


def same_as_gloo(ours, gloo):
    assert len(ours) == len(gloo)
    for a, b in zip(ours, gloo):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), (a - b).abs().max()
    # and the parameters moved: the run trained
    assert not torch.equal(ours[0], model()[0].weight.detach())


def gloo_groups(rows):
    """Gloo groups for each row of rows (every rank calls new_group for each)."""
    mine = None
    for ranks in rows:
        g = dist.new_group(ranks, backend="gloo")
        if RANK in ranks:
            mine = g
    return mine


def test_fsdp2_matches_gloo():
    ours = fsdp(init_device_mesh("cpu", (SIZE,)))
    gloo = fsdp(DeviceMesh.from_group(GLOO, "cpu"))
    same_as_gloo(ours, gloo)


def test_tensor_parallel_matches_gloo():
    ours = tp(init_device_mesh("cpu", (SIZE,)))
    gloo = tp(DeviceMesh.from_group(GLOO, "cpu"))
    same_as_gloo(ours, gloo)


def test_2d_mesh_fsdp2_over_tp_matches_gloo():
    if SIZE % 2:
        pytest.skip("a data x tensor mesh of 2 columns needs an even world")
    shape = (SIZE // 2, 2)
    ours = two_d(init_device_mesh("cpu", shape, mesh_dim_names=("dp", "tp")))
    grid = torch.arange(SIZE).view(shape)
    dp = gloo_groups(grid.t().tolist())  # ranks with the same tp index
    tpg = gloo_groups(grid.tolist())
    mesh = DeviceMesh.from_group([dp, tpg], "cpu", mesh=grid, mesh_dim_names=("dp", "tp"))
    same_as_gloo(ours, two_d(mesh))


def test_mesh_groups_are_distcomm():
    mesh = init_device_mesh("cpu", (SIZE // 2, 2) if SIZE % 2 == 0 else (SIZE, 1),
                            mesh_dim_names=("dp", "tp"))
    for name in ("dp", "tp"):
        pg = mesh.get_group(name)
        assert dist.get_backend(pg) == "distcomm", dist.get_backend(pg)
        t = torch.ones(2)
        dist.all_reduce(t, group=pg)
        assert t[0] == pg.size()


def test_abort_ends_the_group_s_waits_at_once():
    """torch 2's ProcessGroup.abort(): every later wait on the group fails
    at once with distcomm's error (here on every rank of a subgroup made
    for it); the other groups are untouched."""
    if SIZE == 1:
        pytest.skip("a group of one never waits")
    sub = dist.new_group()
    t = torch.ones(1 << 16)
    dist.all_reduce(t, group=sub)
    sub.abort()
    t0 = time.monotonic()
    with pytest.raises(distcomm.AbortedError, match="aborted"):
        dist.all_reduce(t, group=sub)
    assert time.monotonic() - t0 < 5
    t = torch.ones(2)
    dist.all_reduce(t)  # the world group still works
    assert t[0] == SIZE
