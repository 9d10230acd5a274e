"""Objects with __dlpack__ instead of the buffer protocol: read and written
in place, bfloat16 recognised, non-contiguous ones copied, bad devices and
dtypes refused before any communication. Needs numpy's own __dlpack__
(numpy >= 1.22); torch's tensors are checked too when torch is installed."""
import numpy as np
import pytest

import distcomm
from distcomm import _distcomm


class OnlyDLPack:
    """Exposes an array through __dlpack__ alone, like a foreign array type."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()


def test_dlpack_input_and_out_share_memory(world):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = distcomm.all_sum(OnlyDLPack(x))
    assert np.array_equal(y, x * world.size())
    out = np.zeros_like(x)
    distcomm.all_sum(OnlyDLPack(x), out=OnlyDLPack(out))
    assert np.array_equal(out, x * world.size())  # written in place


def test_dlpack_view_is_zero_copy_with_shape_and_strides():
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    v = _distcomm.dlpack_view(OnlyDLPack(x))
    a = np.asarray(v)
    assert v.dtype == "int64" and a.shape == (3, 4)
    a[0, 0] = 99
    assert x[0, 0] == 99
    t = np.asarray(_distcomm.dlpack_view(OnlyDLPack(x[:, 1:3])))
    assert not t.flags.c_contiguous and np.array_equal(t, x[:, 1:3])


def test_non_contiguous_dlpack_input_is_copied(world):
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    y = distcomm.all_gather(OnlyDLPack(x[:, ::2]))
    assert np.array_equal(y, np.concatenate([x[:, ::2]] * world.size()))


def test_the_raw_op_refuses_a_non_contiguous_dlpack_buffer(world):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1:3]
    with pytest.raises(ValueError, match="C-contiguous"):
        _distcomm.all_reduce(world, OnlyDLPack(x), np.zeros(6, np.float32), 11, 0)


def test_an_object_without_buffer_or_dlpack_is_a_type_error(world):
    with pytest.raises(TypeError, match="buffer protocol or DLPack"):
        _distcomm.all_reduce(world, object(), np.zeros(1), 12, 0)


def test_torch_tensors_bfloat16_and_errors(world):
    torch = pytest.importorskip("torch", reason="python3-torch is not installed")
    t = torch.arange(6, dtype=torch.bfloat16)
    y = distcomm.all_sum(t)  # bfloat16 recognised from DLPack, no dtype=
    assert y.dtype == np.uint16
    assert torch.equal(torch.from_numpy(y.view(np.int16)).view(torch.bfloat16),
                       t * world.size())
    out = torch.zeros(6)
    distcomm.all_max(torch.arange(6.0), out=out)
    assert torch.equal(out, torch.arange(6.0))
    with pytest.raises(TypeError, match="DLPack dtype"):
        distcomm.all_sum(torch.ones(2, dtype=torch.complex128))
