"""What a session needs to know about the event loop it runs on.

Found without importing asyncio (it stays off the start-up path of a trio program) and
without sniffio: the running asyncio loop, if any, and how handler tasks are created on it.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Coroutine
from typing import Any


def running_asyncio_loop() -> Any:
    """The running asyncio event loop, or ``None`` under another event loop (trio)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def task_factory(loop: Any) -> Callable[[Coroutine[Any, Any, None]], Any]:
    """How handler tasks are created on ``loop``: on Python 3.12+ eagerly — the handler
    runs at once, as the current task, until it first waits, so a handler that never waits
    is answered without a task switch (what ``asyncio.eager_task_factory`` does); before
    3.12, ``loop.create_task``."""
    if sys.version_info >= (3, 12):
        task_class = sys.modules["asyncio"].Task
        return functools.partial(task_class, loop=loop, eager_start=True)
    return loop.create_task  # type: ignore[no-any-return]
