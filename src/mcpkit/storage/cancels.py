"""Cancellation that is not lost: background tasks of the shared stores, stopped for sure.

redis-py writes every command through ``asyncio.wait_for``, which on Python 3.11 drops a
cancellation that arrives in the loop turn the write completes: it returns the result
instead of raising (CPython gh-86296, fixed in 3.12). A task cancelled once with
``.cancel()`` while in a Redis call then runs on, a ``while True`` loop (a heartbeat, a
subscriber's reader) forever, and whoever awaits it hangs: that hung the test runner's
teardown. The task still counts the request (``Task.cancelling()``), so:

- ``cancels()`` before a call and ``keep_cancel(asked)`` after it raise the
  ``CancelledError`` the driver dropped (``RedisLink.run`` does it for every Redis call);
- ``stop_tasks`` cancels background tasks and waits for them with a bound, without
  swallowing the stopper's own cancellation (never ``suppress(BaseException)`` around an
  ``await``: that hides the caller's cancel too).

Standard library only (``import mcpkit`` stays light).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger("mcpkit.storage")


def cancels() -> int:
    """How many cancellations of the running task are pending (``Task.cancelling()``)."""
    task = asyncio.current_task()
    return 0 if task is None else task.cancelling()


def keep_cancel(asked: int) -> None:
    """Raise ``CancelledError`` when the running task was asked to cancel since
    ``cancels()`` was ``asked`` and yet is still running: a cancellation the driver
    dropped (module docstring) is delivered after all."""
    if cancels() > asked:
        raise asyncio.CancelledError("cancelled during a Redis call (delivered again)")


async def stop_tasks(tasks: Iterable[asyncio.Task[Any]], seconds: float, what: str) -> None:
    """Cancel ``tasks`` and wait up to ``seconds`` for them to end (logging those that did
    not). ``asyncio.wait`` neither raises their outcome nor hides a cancellation of the
    caller, which propagates as usual."""
    pending = [task for task in tasks if not task.done()]
    for task in pending:
        task.cancel()
    if not pending:
        return
    _, left = await asyncio.wait(pending, timeout=seconds)
    if left:
        log.warning("%d %s task(s) did not stop within %ss of being cancelled", len(left),
                    what, seconds)


__all__ = ["cancels", "keep_cancel", "stop_tasks"]
