"""How ``Server.run("http", ...)`` builds its app, and the stores of an app: in memory,
one per app, when none is given; a session store that keeps a shared secret gives the key
that seals 2026-07-28 ``requestState`` of its app, and the server's own key stays. (The
options themselves: tests/test_http_options.py; apps of one server apart:
tests/test_http_app.py.)
"""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import Server
from mcpkit.server import running
from mcpkit.storage import MemoryEventStore, MemorySessionStore, SharedSecret
from mcpkit.storage.sessions import Record
from mcpkit.transports.http_server import StreamableHTTPApp


def test_run_http_builds_the_app_from_its_options(monkeypatch: pytest.MonkeyPatch) -> None:
    served: dict[str, Any] = {}

    def fake_run_http(app: Any, **kwargs: Any) -> None:
        served.update(kwargs, app=app)

    monkeypatch.setattr(running, "run_http", fake_run_http)
    events = MemoryEventStore()
    server = Server("opts")
    server.run("http", port=0, path="/x", loop="asyncio", drain_timeout=0.5,
               response_mode="json", max_body=5, enable_get=False, event_store=events)
    app = served.pop("app")
    assert isinstance(app, StreamableHTTPApp)
    assert served == {"host": "127.0.0.1", "port": 0, "path": "/x", "http": "auto",
                      "loop": "asyncio", "header_timeout": 10.0}
    cfg = app.config
    assert (cfg.path, cfg.response_mode, cfg.max_body, cfg.enable_get) == ("/x", "json", 5,
                                                                            False)
    assert app.event_store is events
    assert isinstance(app.session_store, MemorySessionStore)
    assert server.drain_timeout == 0.5


def test_stores_default_to_memory_per_app() -> None:
    server = Server("stores")
    one, two = server.asgi_app(), server.asgi_app()
    assert isinstance(one.event_store, MemoryEventStore)
    assert one.event_store is not two.event_store
    assert one.session_store is not two.session_store
    assert one.config.event_store is None  # the options as given


class KeyStore(MemorySessionStore):
    """A session store that keeps a shared secret, as ``SQLiteSessionStore`` does."""

    def secret(self) -> bytes:
        return b"k" * 32


class RecordStore:
    """A session store of its own (no base class, no secret): structurally a SessionStore."""

    def __init__(self) -> None:
        self.records: dict[str, Record] = {}

    async def save(self, session_id: str, record: Record) -> None:
        self.records[session_id] = record

    async def load(self, session_id: str) -> Record | None:
        return self.records.get(session_id)

    async def delete(self, session_id: str) -> None:
        self.records.pop(session_id, None)


def sealing_key(app: StreamableHTTPApp) -> bytes:
    """The key the app seals ``requestState`` with (its handler table's seal)."""
    return app.on_request.__self__._seal.key  # type: ignore[attr-defined,no-any-return]


def test_a_store_with_a_shared_secret_gives_its_app_the_state_key() -> None:
    assert isinstance(KeyStore(), SharedSecret)
    assert not isinstance(RecordStore(), SharedSecret)
    server = Server("shared")
    before = server.state_key
    assert sealing_key(server.asgi_app(session_store=KeyStore())) == b"k" * 32
    assert server.state_key == before  # the server's own: stdio and other apps keep it
    assert sealing_key(server.asgi_app()) == before

    own = Server("own")
    before = own.state_key
    store = RecordStore()
    app = own.asgi_app(session_store=store)
    assert app.session_store is store
    assert sealing_key(app) == own.state_key == before

    given = Server("given", state_key=b"g" * 32)
    assert sealing_key(given.asgi_app(session_store=KeyStore())) == b"g" * 32
    assert given.state_key == b"g" * 32
