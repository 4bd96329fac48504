"""The server under test: a stdio command or a Streamable HTTP URL, and channels to it.

Each probe that needs a fresh conversation opens a new channel: over stdio that is a new
server process, over HTTP a new session (or, in 2026-07-28, simply new requests). The
HTTP client never follows redirects, so the checker never leaves the target's origin
(only the authorization probes GET the metadata documents the server names). ``token``
is the access token the checks run with (the CLI also puts it in ``headers`` as
``Authorization: Bearer``); ``wrong_audience_token`` one for another server, which a
protected server must refuse.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx

from .wire import Channel, WireLog
from .wire.http import HttpChannel
from .wire.sse import SseChannel
from .wire.stdio import StdioChannel


@dataclass(slots=True)
class Target:
    command: list[str] | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = 5.0
    env: dict[str, str] | None = None
    cwd: str | None = None
    token: str | None = None
    wrong_audience_token: str | None = None
    legacy_sse: bool = False  # url is a 2024-11-05 HTTP+SSE endpoint (GET stream + POSTs)
    _client: httpx.AsyncClient | None = None

    @property
    def transport(self) -> str:
        if self.command is not None:
            return "stdio"
        return "sse" if self.legacy_sse else "http"

    @property
    def bearer(self) -> str | None:
        """The access token the checks run with: ``token``, else the one in an
        ``Authorization: Bearer`` header of ``headers`` (sent on every request)."""
        if self.token:
            return self.token
        for name, value in self.headers.items():
            scheme, _, credentials = value.strip().partition(" ")
            if name.lower() == "authorization" and scheme.lower() == "bearer":
                return credentials.strip() or None
        return None

    def http_headers(self) -> dict[str, str]:
        """``headers``, with ``Authorization: Bearer token`` when ``token`` is set and no
        ``Authorization`` header is."""
        if self.token and not any(k.lower() == "authorization" for k in self.headers):
            return {**self.headers, "Authorization": f"Bearer {self.token}"}
        return dict(self.headers)

    def describe(self) -> str:
        if self.command is not None:
            return f"--stdio {shlex.join(self.command)}"
        return str(self.url)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Target]:
        """Keep one HTTP connection pool for the whole run."""
        if self.url is None:
            yield self
            return
        async with httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout), follow_redirects=False, trust_env=False
        ) as client:
            self._client = client
            try:
                yield self
            finally:
                self._client = None

    @asynccontextmanager
    async def channel(self, log: WireLog, label: str) -> AsyncIterator[Channel]:
        if self.command is not None:
            chan = StdioChannel(self.command, log, label, self.timeout, self.env, self.cwd)
            async with chan:
                yield chan
            return
        assert self._client is not None and self.url is not None
        if self.legacy_sse:
            async with SseChannel(self._client, self.url, log, label, self.timeout,
                                  self.http_headers()) as sse:
                yield sse
            return
        http = HttpChannel(self._client, self.url, log, label, self.timeout,
                           self.http_headers())
        try:
            yield http
        finally:
            await http.aclose()
