"""Failures on the "distcomm" torch backend: they raise Python exceptions
that name the peer, within bounds, and never hang: a mismatch, a timeout
(new_group's timeout= reaches the library), a killed peer during an
all_reduce and during DDP's backward."""
import datetime
import os
import socket
import subprocess
import sys
import time

import pytest

from torch_common import RANK, SIZE, dist, torch  # skips without torch

import distcomm  # noqa: E402
import distcomm.torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
needs2 = pytest.mark.skipif(SIZE < 2, reason="needs 2 ranks")
# The tests that start their own job of two (each process imports torch:
# seconds) do not depend on the launch around them: they run in the 1-rank
# launch (python.torch_1) only, not once more per launch size.
own_job = pytest.mark.skipif(SIZE != 1, reason="runs its own job, in the 1-rank launch")


@needs2
def test_mismatch_names_the_disagreement():
    sub = dist.new_group()  # poisoned by the mismatch, not the world
    n = 10 if RANK == 0 else 20
    with pytest.raises(distcomm.MismatchError):
        dist.all_reduce(torch.ones(n), group=sub)
    with pytest.raises(distcomm.MismatchError):  # the first error again, at once
        dist.all_reduce(torch.ones(n), group=sub)
    t = torch.ones(2)
    dist.all_reduce(t)
    assert t[0] == SIZE


@needs2
def test_timeout_names_the_peer():
    sub = dist.new_group(timeout=datetime.timedelta(seconds=0.5))
    if RANK == 0:
        t0 = time.monotonic()
        with pytest.raises(distcomm.TimeoutError, match="rank 1"):
            dist.recv(torch.empty(4), 1, group=sub)  # rank 1 never sends
        assert 0.4 < time.monotonic() - t0 < 3
    dist.barrier()  # rank 1 keeps sub open until rank 0 is done


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def job_env(**extra):
    """The environment of a job started by hand, without the launcher's."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MLX_", "DISTCOMM_JOB", "MASTER_", "RANK", "WORLD_SIZE"))}
    return dict(env, DISTCOMM_TIMEOUT="20", **extra)


def hostfile_of(tmp_path, n):
    path = tmp_path / "hosts.json"
    path.write_text("[%s]" % ", ".join(f'["127.0.0.1:{p}"]' for p in free_ports(n)))
    return str(path)


@pytest.mark.parametrize("master", [False, True], ids=["own store", "MASTER_ADDR"])
@own_job
def test_torchrun_variables_with_a_hostfile(master, tmp_path):
    """RANK and WORLD_SIZE (torchrun's) stand in for MLX_RANK; with
    MASTER_ADDR/MASTER_PORT torch's own env:// store is used."""
    hostfile = hostfile_of(tmp_path, 2)
    master_env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_ports(1)[0])}
    worker = os.path.join(HERE, "torch_peer_worker.py")
    procs = [subprocess.Popen([sys.executable, worker, "hello"], stdout=subprocess.PIPE,
                              text=True, env=job_env(RANK=str(r), WORLD_SIZE="2",
                                                     MLX_HOSTFILE=hostfile,
                                                     **(master_env if master else {})))
             for r in range(2)]
    try:
        outs = [p.communicate(timeout=60)[0].split() for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert outs == [["0", "2", "2"], ["1", "2", "2"]]


@own_job
def test_torch_and_distcomm_disagreeing_on_the_rank_is_an_error(tmp_path):
    """torchrun's RANK says one thing and MLX_RANK another: both ranks stop
    at init_process_group with an error that gives both."""
    hostfile = hostfile_of(tmp_path, 2)
    master = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_ports(1)[0])}
    worker = os.path.join(HERE, "torch_peer_worker.py")
    procs = [subprocess.Popen([sys.executable, worker, "hello"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env=job_env(RANK=str(1 - r), MLX_RANK=str(r), WORLD_SIZE="2",
                                          MLX_HOSTFILE=hostfile, **master))
             for r in range(2)]
    try:
        errs = [p.communicate(timeout=60)[1] for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert all(p.returncode != 0 for p in procs)
    for r, err in enumerate(errs):
        assert (f"torch says rank {1 - r} of 2, but distcomm's configuration (MLX_RANK, "
                f"MLX_HOSTFILE) says rank {r} of 2") in err, err


def test_a_subgroup_made_past_the_wrapper_is_refused():
    """torch's own new_group (imported before distcomm.torch) would call the
    backend on the members only, which cannot split alone."""
    with pytest.raises(RuntimeError, match="must come from torch.distributed.new_group"):
        distcomm.torch._torch_new_group(backend="distcomm")
    dist.barrier()


@own_job
def test_a_distcomm_subgroup_of_a_gloo_world_is_refused(tmp_path):
    hostfile = hostfile_of(tmp_path, 2)
    worker = os.path.join(HERE, "torch_peer_worker.py")
    procs = [subprocess.Popen([sys.executable, worker, "gloo_default"], stdout=subprocess.PIPE,
                              text=True, env=job_env(MLX_RANK=str(r), MLX_HOSTFILE=hostfile))
             for r in range(2)]
    try:
        outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert outs == ["NotSupportedError distcomm: new_group(backend='distcomm') needs "
                    "init_process_group('distcomm')"] * 2


@pytest.mark.parametrize("mode", ["all_reduce", "ddp", "ddp_async", "ddp_hook", "async"])
@own_job
def test_killed_peer_raises_naming_it(mode, tmp_path):
    """A job of two started by hand (the launcher would stop the survivor):
    rank 1 is killed with SIGKILL while rank 0 waits on it; rank 0 then
    exits cleanly (issue 17: with "ddp_hook" it used to abort at exit with
    torch's "terminate called after throwing", see _Completer)."""
    hostfile = hostfile_of(tmp_path, 2)
    worker = os.path.join(HERE, "torch_peer_worker.py")
    procs = [subprocess.Popen([sys.executable, worker, mode], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE if r == 0 else None, text=True,
                              env=job_env(MLX_RANK=str(r), MLX_HOSTFILE=hostfile))
             for r in range(2)]
    try:
        assert procs[1].stdout.readline().strip() == "ready"
        assert procs[0].stdout.readline().strip() == "ready"
        if mode.startswith("ddp"):  # the failure comes inside backward's all_reduce
            assert procs[0].stdout.readline().strip() == "forward done"
        if mode == "async":  # the three requests started without waiting for rank 1
            assert procs[0].stdout.readline().strip() == "issued"
        time.sleep(0.3)  # rank 0 is now waiting on rank 1
        procs[1].kill()
        t0 = time.monotonic()
        line = procs[0].stdout.readline().strip()
        elapsed = time.monotonic() - t0
        # each later request fails too, with the first failure's detail
        rest = [procs[0].stdout.readline().strip() for _ in range(2)] if mode == "async" \
            else []
        more, err = procs[0].communicate(timeout=30)  # rank 0 exits by itself
    finally:
        for p in procs:
            p.kill()
            p.wait()
    # DDP's all_reduce runs inside torch's autograd engine, which re-raises
    # the error as a RuntimeError whose message gives its type (after "Got the
    # following error when running the callback: " when it came from a request)
    if mode in ("all_reduce", "async"):
        assert line.startswith("PeerLostError all_sum:"), line
    elif line.startswith("PeerLostError "):  # torch 2's reducer raises it as it came
        assert not torch.__version__.startswith("1.") and "all_sum:" in line, line
    else:
        assert line.startswith("RuntimeError ") and "PeerLostError: all_sum:" in line, line
    assert "rank 1" in line, line
    assert rest == [line] * len(rest)
    assert elapsed < 3.0
    assert procs[0].returncode == 0 and "terminate called" not in err, \
        (procs[0].returncode, more, err)


@own_job
def test_no_hostfile_and_a_store_without_an_address_is_a_clear_error(tmp_path):
    """Started without distcomm's variables and with a store that is not a
    TCPStore (FileStore) and no MASTER_ADDR: rank 0 cannot tell where its
    coordinator should listen and says so at once, naming what to set."""
    code = ("import datetime, sys, torch.distributed as dist, distcomm.torch\n"
            "store = dist.FileStore(sys.argv[1], 2)\n"
            "try:\n"
            "    dist.init_process_group('distcomm', store=store, rank=0, world_size=2,\n"
            "                            timeout=datetime.timedelta(seconds=20))\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, e)\n")
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "store")],
                         capture_output=True, text=True, timeout=60, env=job_env()).stdout
    assert time.monotonic() - t0 < 30
    assert out.startswith("InvalidArgumentError distcomm: cannot tell where rank 0 is"), out
    assert "MASTER_ADDR" in out and "distcomm-launch" in out, out
