"""Failures become distcomm.Error subclasses carrying the library's detail;
waits release the GIL and give way to Ctrl-C; nothing leaks."""
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import tracemalloc

import numpy as np
import pytest

import distcomm

HERE = os.path.dirname(os.path.abspath(__file__))
needs2 = pytest.mark.skipif(distcomm.init().size() < 2, reason="needs 2 ranks")


# torchrun's variables, which distcomm-launch also sets (a job started by
# hand from a launched rank must not inherit them)
LAUNCHER_TORCH_VARS = {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                       "LOCAL_WORLD_SIZE"}


def clean_env(**extra):
    """The environment of a job started by hand, without the launcher's."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MLX_", "DISTCOMM_JOB"))
           and k not in LAUNCHER_TORCH_VARS}
    env.update(extra)
    return env


def test_exception_hierarchy():
    assert issubclass(distcomm.PeerLostError, distcomm.Error)
    assert issubclass(distcomm.PeerLostError, ConnectionError)
    assert issubclass(distcomm.TimeoutError, TimeoutError)
    assert issubclass(distcomm.InvalidArgumentError, ValueError)
    assert issubclass(distcomm.Error, RuntimeError)


def header_statuses():
    """The status names of DC_STATUS_MAP in include/distcomm.h."""
    with open(os.path.join(HERE, "..", "..", "include", "distcomm.h")) as f:
        return re.findall(r"^\s*X\((\w+), -?\d+,", f.read(), re.M)


def test_every_status_of_the_header_has_its_exception():
    names = [s for s in header_statuses() if s != "OK"]
    assert len(names) >= 12 and set(distcomm.ERRORS) == set(names)
    for status, cls in distcomm.ERRORS.items():
        assert issubclass(cls, distcomm.Error) and cls is not distcomm.Error
        assert cls.status == status and status in cls.__doc__
        assert getattr(distcomm, cls.__name__) is cls and cls.__name__ in distcomm.__all__
    assert len({cls.__name__ for cls in distcomm.ERRORS.values()}) == len(names)
    # the rule ERR_PEER_LOST -> PeerLostError, and the names it keeps
    assert distcomm.ERRORS["ERR_PEER_LOST"] is distcomm.PeerLostError
    assert distcomm.ERRORS["ERR_INVALID"] is distcomm.InvalidArgumentError
    assert distcomm.ERRORS["ERR_NOMEM"] is distcomm.OutOfMemoryError
    assert distcomm.ERRORS["ERR_SYSTEM"] is distcomm.SystemCallError


def test_strict_init_without_configuration():
    code = ("import distcomm\n"
            "try:\n    distcomm.init(strict=True)\n"
            "except distcomm.UnavailableError as e:\n    print(e.status, e)\n"
            "print(distcomm.init().size(), distcomm.init().backend)\n")
    out = subprocess.run([sys.executable, "-c", code], env=clean_env(),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    assert first.startswith("ERR_UNAVAILABLE") and "MLX_" in first
    assert second == "1 singleton"


def test_send_to_a_rank_out_of_range(world):
    before = world.collectives()
    with pytest.raises(distcomm.InvalidArgumentError) as err:
        distcomm.send(np.ones(3), world.size() + 5)
    assert err.value.status == "ERR_INVALID"
    assert world.collectives() == before
    assert distcomm.all_sum(np.ones(1))[0] == world.size()  # the world is fine


@needs2
def test_mismatch_names_the_disagreement(world):
    sub = world.split(0)  # a group of its own: the mismatch poisons it
    count = 10 if world.rank() == 0 else 20
    with pytest.raises(distcomm.MismatchError) as err:
        distcomm.all_sum(np.ones(count, np.float32), group=sub)
    assert err.value.status == "ERR_MISMATCH"
    assert "disagrees" in str(err.value) or "mismatch" in str(err.value).lower()
    with pytest.raises(distcomm.MismatchError):  # poisoned: the first error again
        distcomm.all_sum(np.ones(count, np.float32), group=sub)
    del sub
    assert distcomm.all_sum(np.ones(1))[0] == world.size()


@needs2
def test_timeout_names_the_peer_and_releases_the_gil(world):
    sub = world.split(0)
    if world.rank() == 0:
        sub.set_timeout(0.5)
        ticks = []
        stop = threading.Event()

        def spin():  # runs only if the waiting call released the GIL
            while not stop.is_set():
                ticks.append(1)
                time.sleep(0.005)

        t = threading.Thread(target=spin)
        t.start()
        t0 = time.monotonic()
        with pytest.raises(distcomm.TimeoutError) as err:
            distcomm.recv(4, np.float32, 1, group=sub)
        stop.set()
        t.join()
        assert 0.4 < time.monotonic() - t0 < 3
        assert "rank 1" in str(err.value)
        assert len(ticks) > 20
    # Rank 1 keeps sub open until rank 0 is done (closing it would make
    # rank 0's wait end with PeerLostError instead).
    distcomm.all_sum(np.ones(1))
    del sub


@needs2
def test_ctrl_c_interrupts_a_wait_within_a_second(world):
    sub = world.split(0)
    if world.rank() == 0:
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            distcomm.recv(4, np.float32, 1, group=sub)  # rank 1 never sends
        assert time.monotonic() - t0 < 1.3
        with pytest.raises(distcomm.InterruptedError):  # the group is unusable now
            distcomm.recv(4, np.float32, 1, group=sub)
    distcomm.all_sum(np.ones(1))  # as above: sub stays open meanwhile
    del sub


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def test_killed_peer_raises_within_two_seconds(world, tmp_path):
    """A job of two started by hand (the launcher would stop the survivor):
    rank 1 is killed with SIGKILL while rank 0 waits on it."""
    if world.rank() != 0:
        pytest.skip("runs its own job, once per launch")
    hostfile = tmp_path / "hosts.json"
    hostfile.write_text("[%s]" % ", ".join(f'["127.0.0.1:{p}"]' for p in free_ports(2)))
    worker = os.path.join(HERE, "peer_worker.py")
    procs = [subprocess.Popen([sys.executable, worker], stdout=subprocess.PIPE, text=True,
                              env=clean_env(MLX_RANK=str(r), MLX_HOSTFILE=str(hostfile),
                                            DISTCOMM_TIMEOUT="20"))
             for r in range(2)]
    try:
        assert procs[1].stdout.readline().strip() == "ready"
        assert procs[0].stdout.readline().strip() == "ready"
        time.sleep(0.2)  # rank 0 is now waiting in recv
        procs[1].kill()
        t0 = time.monotonic()
        line = procs[0].stdout.readline().strip()
        elapsed = time.monotonic() - t0
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert line.startswith("PeerLostError ERR_PEER_LOST"), line
    assert "rank 1" in line
    assert elapsed < 2.0


def test_no_reference_or_memory_leak_over_10000_calls(world):
    x = np.ones(16, np.float32)
    out = np.empty_like(x)
    refs = (sys.getrefcount(x), sys.getrefcount(out))
    for _ in range(200):  # warm up caches before measuring
        distcomm.all_sum(x, out=out)
        distcomm.all_sum(x)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(5000):
        distcomm.all_sum(x, out=out)
        distcomm.all_max(x)
    for _ in range(100):
        try:
            distcomm.all_sum(np.array(["bad"]))
        except TypeError:
            pass
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert (sys.getrefcount(x), sys.getrefcount(out)) == refs
    assert grown < 64 * 1024, f"{grown} bytes kept after 10000 calls"
    assert np.all(out == world.size())
