"""A group serves one thread at a time, however many Python objects refer to
it: every init() names the same world group, so the one-thread guard must
hold across init() results, not only within one of them."""
import threading
import time

import numpy as np
import pytest

import distcomm

needs2 = pytest.mark.skipif(distcomm.init().size() < 2, reason="needs 2 ranks")


def wait_until_busy(group, deadline_s):
    """True once a call on group from another thread is seen in flight.

    set_timeout goes through the same guard as a collective but sends
    nothing, so probing with it cannot disturb the engine."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            group.set_timeout(30)
        except RuntimeError as e:
            assert not isinstance(e, distcomm.Error), e
            return True
        time.sleep(0.01)
    return False


@needs2
def test_two_init_results_share_the_one_thread_guard(world):
    first, second = distcomm.init(), distcomm.init()
    # Side channel between ranks 0 and 1 with its own connections: tells
    # rank 1 when to send the message rank 0's first thread waits for.
    side = world.split(0 if world.rank() < 2 else -1)
    if world.rank() == 0:
        got = {}

        def waiter():  # holds the world group until rank 1 sends
            got["x"] = distcomm.recv(1, np.float32, 1, group=first)

        t = threading.Thread(target=waiter)
        t.start()
        try:
            busy = wait_until_busy(second, deadline_s=5)
            if busy:
                with pytest.raises(RuntimeError, match="another thread") as err:
                    distcomm.all_sum(np.ones(1, np.float32), group=second)
                assert not isinstance(err.value, distcomm.Error)
        finally:
            distcomm.send(np.ones(1, np.float32), 1, group=side)  # "go"
            t.join(timeout=40)  # the recv itself is bounded by DISTCOMM_TIMEOUT
        assert not t.is_alive()
        assert got["x"][0] == 7
        assert busy, "a second init() result was usable while the first was in a call"
    elif world.rank() == 1:
        distcomm.recv(1, np.float32, 0, group=side)
        distcomm.send(np.full(1, 7, np.float32), 0, group=first)
    del side
    assert distcomm.all_sum(np.ones(1), group=second)[0] == world.size()


def test_init_returns_the_same_group_object():
    assert distcomm.init() is distcomm.init()
    assert distcomm._distcomm.init() is distcomm.init()
