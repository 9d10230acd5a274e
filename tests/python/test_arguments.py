"""Every enum and rank argument is checked at the module's boundary (issue
33, M4: op -1 was the library's internal "no reduction" and all_reduce
returned the input unreduced), and no borrowed reference is held across a
call that runs Python (L1: an item whose __dlpack__ empties the list
crashed the interpreter)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import distcomm
from distcomm import _distcomm as _c

F32 = _c.DTYPES["float32"][0]
SUM = _c.OPS["sum"]


# torchrun's variables, which distcomm-launch also sets (a job started by
# hand from a launched rank must not inherit them)
LAUNCHER_TORCH_VARS = {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                       "LOCAL_WORLD_SIZE"}


def fresh(n=4):
    return np.arange(n, dtype=np.float32) + 1


def still_usable(world):
    assert distcomm.all_sum(np.ones(2, np.float32))[0] == world.size()


@pytest.mark.parametrize("op", [-1, len(_c.OPS), 99])
def test_all_reduce_op_out_of_range(world, op):
    x, y = fresh(), np.zeros(4, np.float32)
    with pytest.raises(ValueError, match=f"op code {op} "):
        _c.all_reduce(world, x, y, F32, op)
    assert not y.any()  # nothing written
    still_usable(world)


@pytest.mark.parametrize("op", [-1, len(_c.OPS)])
def test_reduce_scatter_op_out_of_range(world, op):
    x, y = fresh(4 * world.size()), np.zeros(4, np.float32)
    with pytest.raises(ValueError, match=f"op code {op} "):
        _c.reduce_scatter(world, x, y, F32, op)
    assert not y.any()
    still_usable(world)


@pytest.mark.parametrize("kind", ["all_reduce", "reduce_scatter", "reduce"])
def test_request_op_out_of_range(world, kind):
    n = world.size() if kind == "reduce_scatter" else 1
    x, y = fresh(4 * n), np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="op code -1 "):
        _c.start(world, kind, x, y, F32, -1, 0, y)
    still_usable(world)


@pytest.mark.parametrize("code", [-1, len(_c.DTYPES), 99])
def test_dtype_out_of_range(world, code):
    x, y = fresh(), np.zeros(4, np.float32)
    for call in (lambda: _c.all_reduce(world, x, y, code, SUM),
                 lambda: _c.all_gather(world, x, y, code),
                 lambda: _c.broadcast(world, x, code, 0),
                 lambda: _c.start(world, "all_reduce", x, y, code, SUM, 0, y)):
        with pytest.raises(ValueError, match=f"dtype code {code} "):
            call()
    still_usable(world)


@pytest.mark.parametrize("root", [-1, 1000])
def test_root_out_of_range(world, root):
    x = fresh()
    with pytest.raises(distcomm.InvalidArgumentError, match=f"root {root} is out of range"):
        _c.broadcast(world, x, F32, root)
    # non-blocking: refused when started, with the library's detail
    with pytest.raises(distcomm.InvalidArgumentError, match=f"igather: root {root} is out"):
        _c.start(world, "gather", x, None, F32, 0, root, None)
    still_usable(world)


def test_peer_is_this_rank(world):
    x = fresh()
    with pytest.raises(distcomm.InvalidArgumentError, match="dst .* is this rank"):
        _c.send(world, x, F32, world.rank())
    with pytest.raises(distcomm.InvalidArgumentError, match="isend: dst .* is this rank"):
        _c.start(world, "send", x, None, F32, 0, world.rank(), None)
    with pytest.raises(distcomm.InvalidArgumentError, match="src -1 is out of range"):
        _c.recv(world, x, F32, -1)
    still_usable(world)


# L1: run where a crash is a failed test, not a dead test runner. A group
# of one (no launcher variables): the lists are the point, not the wire.
MUTATE = """
import numpy as np, distcomm
from distcomm import _distcomm as _c
g = distcomm.init()
F32 = _c.DTYPES["float32"][0]
arrays, codes = [], []

class ClearsOnDlpack:
    def __init__(self, a):
        self.a = a
    def __dlpack__(self, *args, **kw):
        arrays.clear(); codes.clear()
        return self.a.__dlpack__()
    def __dlpack_device__(self):
        return self.a.__dlpack_device__()

class ClearsOnIndex:
    def __index__(self):
        arrays.clear(); codes.clear()
        return F32

def fill(first, code0):
    arrays[:] = [first] + [np.ones(1000, np.float32) for _ in range(50)]
    codes[:] = [code0] + [F32] * 50

x = np.full(1000, 3, np.float32)
fill(ClearsOnDlpack(x), F32)
_c.average_gradients(g, arrays, codes, 0)
fill(np.full(1000, 3, np.float32), ClearsOnIndex())
_c.clip_grad_norm_sharded(g, arrays, codes, 1.0)
fill(ClearsOnDlpack(x), F32)
_c.average_start(g, arrays, codes, 0).wait()
print("survived", float(x[0]))
"""


def test_lists_changed_by_dlpack_or_index_do_not_crash():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MLX_", "DISTCOMM_JOB"))
           and k not in LAUNCHER_TORCH_VARS}
    out = subprocess.run([sys.executable, "-c", MUTATE], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert out.stdout.split() == ["survived", "3.0"]
