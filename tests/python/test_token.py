"""The job token leaves the environment once init has read it (audit item
14): the C library unsets it, and Python's own copy, os.environ, must not
keep it either, or a child started with env=os.environ.copy() inherits it."""
import os
import subprocess
import sys

import pytest

from conftest import HAD_TOKEN

SHOW = "import os; print(os.environ.get('DISTCOMM_JOB_TOKEN', 'none'))"


@pytest.mark.skipif(not HAD_TOKEN, reason="this rank was started without a job token")
def test_the_token_leaves_os_environ_and_children(world):
    assert "DISTCOMM_JOB_TOKEN" not in os.environ
    for env in (None, os.environ.copy()):
        out = subprocess.run([sys.executable, "-c", SHOW], env=env, capture_output=True,
                             text=True, timeout=60, check=True).stdout.strip()
        assert out == "none", f"a child sees the job token (env={'copy' if env else 'inherited'})"
