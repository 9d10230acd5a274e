"""Shared set-up of the distcomm pytest suite.

Every rank of a launched job runs the whole session (distcomm-launch -n N --
python3 -m pytest tests/python), so tests run in the same order everywhere
and their collectives line up, as in MLX's distributed tests. A test that
must talk to only some ranks uses a split group, so that a deliberate
failure (mismatch, interrupt, timeout) poisons that group and not the world.
"""
import os

import numpy as np
import pytest

import distcomm

# Whether the launcher gave this rank a job token (init removes it).
HAD_TOKEN = "DISTCOMM_JOB_TOKEN" in os.environ
WORLD = distcomm.init()


@pytest.fixture(scope="session")
def world():
    return WORLD


@pytest.fixture
def rng():
    """The same random numbers on every rank."""
    return np.random.default_rng(0)


class FakeGroup:
    """Reports a size and a rank only, so one process can check every
    rank's shard (MLX's tests use the same trick)."""

    def __init__(self, size, rank):
        self._size, self._rank = size, rank

    def size(self):
        return self._size

    def rank(self):
        return self._rank
