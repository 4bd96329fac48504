"""Test-suite configuration shared by every directory: the Hypothesis profile, the
``redis`` fixture (one redis-server per test module, tests/support/redis.py), and no
inherited terminal size or ignored Ctrl-C.

The property-based tests (``tests/protocol/test_properties_*.py``) run under the
``mcpkit`` profile: 200 examples a test, bounded so the whole property suite stays fast
on a shared CI machine; no deadline (a busy machine is not a failure); fresh examples
every run, and a failure prints the ``@reproduce_failure`` blob that replays it; no
example database (nothing is written into the work tree). For a longer local hunt:
``pytest --hypothesis-profile=mcpkit-thorough tests/protocol``.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings

# The terminal size of the runner is not the test's: pytest-xdist workers carry COLUMNS=80,
# and the CLI's tables fit themselves to COLUMNS. Commands run by the tests print to pipes,
# as in a user's script, and see the width a pipe gets.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

# Nor its Ctrl-C: a runner started in the background by a non-interactive shell (or a
# worker of one) ignores SIGINT, and an ignored signal stays ignored in every process the
# tests start, so the tests of what Ctrl-C does would see nothing happen. Python's own
# handler is what a terminal's process has (and a child gets the default disposition).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread: nothing to restore from here
        pass

settings.register_profile(
    "mcpkit",
    max_examples=200,
    deadline=None,
    derandomize=False,
    print_blob=True,
    database=None,
)
settings.register_profile(
    "mcpkit-thorough", parent=settings.get_profile("mcpkit"), max_examples=5000
)
settings.load_profile("mcpkit")


@pytest.fixture(scope="module")
def redis() -> Iterator[Any]:
    """A redis-server for the module's tests (skipped locally without the binary, a failure
    under CI); tests that need their own (restarts, persistence) start one themselves."""
    from tests.support.redis import RedisServer

    with RedisServer() as server:
        yield server
