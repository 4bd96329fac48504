"""A base for test callback recorders: collect what callbacks receive, wait for it.

Callbacks run in tasks the client spawns, so they may land just after the result that
caused them; ``wait_until`` waits (bounded) for a condition on what was recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio


class Recording:
    _changed: anyio.Event | None = None

    def _record(self, bucket: list[Any], item: Any) -> None:
        bucket.append(item)
        if self._changed is not None:
            self._changed.set()
        self._changed = anyio.Event()

    async def wait_until(self, predicate: Callable[[], bool], what: str,
                         timeout: float = 5.0) -> None:
        try:
            with anyio.fail_after(timeout):
                while not predicate():
                    if self._changed is None:
                        self._changed = anyio.Event()
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}") from None
