"""The one failure a shared store reports: it cannot be reached right now.

A store on another machine (Redis) can be down, restarting or too slow. Its calls then
raise ``StoreUnavailable`` within a bounded time instead of hanging; the HTTP transport
answers the request that needed the store with 503 and ``Retry-After`` (the message says
why), and the next request tries again, so an instance recovers by itself once the store
is back. Nothing in this module imports a driver.
"""

from __future__ import annotations


class StoreUnavailable(Exception):
    """A shared store did not answer (unreachable, restarting, or past its timeout).

    ``retry_after``: whole seconds after which a retry may succeed (the 503's
    ``Retry-After``)."""

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after


__all__ = ["StoreUnavailable"]
