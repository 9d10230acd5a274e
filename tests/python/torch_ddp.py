"""DistributedDataParallel on the "distcomm" backend against Gloo in the same
job: the same seed and data give the same parameters (bit-identical on 2
ranks, where a sum of two has one order; within float32 rounding on more),
with several bucket sizes, no_sync gradient accumulation and unused
parameters. Every rank must also end with the same parameters. Each runs
with the backend's default inline_bytes and with inline_bytes -1, where
every bucket's all_reduce is a library request that DDP's reducer waits on
through its future (the overlap with backward)."""
import pytest

from torch_common import GLOO, RANK, SIZE, dist, torch  # skips without torch

import distcomm.torch  # noqa: E402
nn = torch.nn
DDP = torch.nn.parallel.DistributedDataParallel


class Net(nn.Module):
    def __init__(self, with_unused):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.head = nn.Linear(64, 3)
        self.unused = nn.Linear(64, 3) if with_unused else None  # never in forward

    def forward(self, x):
        return self.head(self.body(x))


def train(group, steps=12, bucket_cap_mb=25, accumulate=1, unused=False, hook=None):
    """Parameters after training; the initial weights differ per rank, so
    DDP's broadcast from rank 0 is exercised too."""
    torch.manual_seed(100 + RANK)
    model = Net(unused)
    ddp = DDP(model, process_group=group, bucket_cap_mb=bucket_cap_mb,
              find_unused_parameters=unused)
    if hook is not None:
        ddp.register_comm_hook(group, hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(7 + RANK)  # each rank its own data
    for step in range(steps):
        x, y = torch.randn(16, 8, generator=gen), torch.randint(0, 3, (16,), generator=gen)
        last = (step + 1) % accumulate == 0
        if last:
            nn.functional.cross_entropy(ddp(x), y).backward()
            opt.step()
            opt.zero_grad()
        else:
            with ddp.no_sync():  # gradients pile up locally, no communication
                nn.functional.cross_entropy(ddp(x), y).backward()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def check(ours, gloo):
    if SIZE <= 2:
        assert torch.equal(ours, gloo)
    else:
        assert torch.allclose(ours, gloo, rtol=1e-5, atol=1e-6), (ours - gloo).abs().max()
    every = [torch.empty_like(ours) for _ in range(SIZE)]
    dist.all_gather(every, ours)
    assert all(torch.equal(e, every[0]) for e in every)


@pytest.fixture(autouse=True, params=["inline", "background"])
def mode(request, monkeypatch):
    if request.param == "background":
        monkeypatch.setattr(distcomm.torch.ProcessGroupDistcomm, "inline_bytes", -1)
    return request.param


@pytest.mark.parametrize("bucket_cap_mb", [0.002, 0.02, 25])
def test_ddp_matches_gloo(bucket_cap_mb, mode):
    world = distcomm.torch.ProcessGroupDistcomm
    assert isinstance(dist.group.WORLD, world)
    before = dist.group.WORLD.group.collectives()
    completed = dist.group.WORLD._completer.completed
    ours = train(None, bucket_cap_mb=bucket_cap_mb)
    if mode == "background":  # the reducer's futures came from the completer
        assert dist.group.WORLD._completer.completed - completed >= 12
    # the gradients went through distcomm: at least one all_reduce a step
    assert dist.group.WORLD.group.collectives() - before >= 12
    check(ours, train(GLOO, bucket_cap_mb=bucket_cap_mb))


def test_ddp_no_sync_accumulation_matches_gloo():
    before = dist.group.WORLD.group.collectives()
    ours = train(None, steps=12, accumulate=3)
    synced = dist.group.WORLD.group.collectives() - before
    check(ours, train(GLOO, steps=12, accumulate=3))
    assert synced < 12  # 4 synchronised steps of 12 (plus DDP's set-up)


def test_ddp_unused_parameters_matches_gloo():
    ours = train(None, unused=True)
    check(ours, train(GLOO, unused=True))


def test_ddp_with_a_python_comm_hook_matches_gloo(mode):
    """torch's own Python hook: dist.all_reduce(async_op=True).get_future()
    (our Work's future, completed by the completer) handed to the reducer."""
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
    world = dist.group.WORLD
    completed = world._completer.completed
    ours = train(world, hook=allreduce_hook)
    if mode == "background":  # every bucket: a request, get_future() its future
        assert world._completer.completed - completed >= 12
    check(ours, train(GLOO, hook=allreduce_hook))
