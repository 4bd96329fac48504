"""How a session ends: what happens to the helper tasks a transport gave it.

``Session.spawn`` runs a transport's helper until it ends or the session closes; at the
end of input the pump cancels what is still running and waits for it (a helper that runs
forever must not hang the shutdown). A helper that fails must not vanish silently: its
exception is logged when it happens.
"""

from __future__ import annotations

import anyio
import pytest

from mcpkit.protocol.connection import Connection
from mcpkit.protocol.lifecycle import Role
from mcpkit.session import Session
from mcpkit.transports.memory import memory_pair

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # helpers are plain asyncio tasks there (a task group's elsewhere)


async def test_a_failed_helper_is_logged_and_a_running_one_cancelled(
        caplog: pytest.LogCaptureFixture) -> None:
    ours, theirs = memory_pair()
    session = Session(Connection(Role.SERVER, info={"name": "t", "version": "0"}), ours)
    stopped = anyio.Event()

    async def fails() -> None:
        raise ValueError("the helper's own bug")

    async def runs_forever() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()

    with anyio.fail_after(5), caplog.at_level("ERROR", logger="mcpkit"):
        async with anyio.create_task_group() as tg:
            await tg.start(session.run)
            session.spawn(fails)
            session.spawn(runs_forever)
            await anyio.sleep(0.01)
            await theirs.aclose()  # end of input: the session ends
        await ours.aclose()
        assert stopped.is_set()
    failures = [r for r in caplog.records if "session helper" in r.getMessage()]
    assert len(failures) == 1
    assert failures[0].exc_info is not None
    assert "the helper's own bug" in str(failures[0].exc_info[1])
