"""``Server.asgi_app``'s typed options and how ``Server.run("http", ...)`` passes them on.

The options are written three times (the ``asgi_app`` signature, the ``HttpOptions``
TypedDict of ``run``, the transport's ``HttpConfig``): these tests keep the three alike,
defaults included, and run mypy over a user's code to see it refuse a misspelt option, a
wrong value and a store that lacks a method of its protocol. A session store that keeps
a shared secret gives the key that seals 2026-07-28 ``requestState``; one that does not
leaves the server's own.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Server
from mcpkit.server import running
from mcpkit.server.serving import HttpOptions
from mcpkit.storage import MemoryEventStore, MemorySessionStore, SharedSecret
from mcpkit.storage.sessions import Record
from mcpkit.transports.http_server import HttpConfig, StreamableHTTPApp

from .support.typecheck import mypy_verdict


def keyword_defaults(fn: Any) -> dict[str, Any]:
    return {name: p.default for name, p in inspect.signature(fn).parameters.items()
            if p.kind is p.KEYWORD_ONLY}


# ``auth`` is the one option that is not a transport setting: it wraps the app (and sets
# ``principal_key``, the one transport setting a user never gives). ``run`` takes it by
# name, beside the ``HttpOptions`` it passes through.
NOT_TRANSPORT = {"auth"}
# bus: from store=; max_batch: Server(max_batch=), which stdio obeys too
SET_BY_THE_SERVER = {"path", "principal_key", "bus", "max_batch"}


def test_asgi_app_options_are_the_http_config_fields_with_their_defaults() -> None:
    options = keyword_defaults(Server.asgi_app)
    assert options.pop("auth") is None
    assert options.pop("store") is None  # resolved by the server into stores and a bus
    fields = {f.name: f for f in dataclasses.fields(HttpConfig)
              if f.name not in SET_BY_THE_SERVER}
    assert set(options) == set(fields)
    for name, field in fields.items():
        if field.default is dataclasses.MISSING:  # a store made per app: None stands for it
            assert options[name] is None, name
        else:
            assert options[name] == field.default, name
    assert inspect.signature(Server.asgi_app).parameters["path"].default == HttpConfig.path


def test_run_passes_every_asgi_app_option() -> None:
    assert set(HttpOptions.__annotations__) | NOT_TRANSPORT == set(
        keyword_defaults(Server.asgi_app))
    run = keyword_defaults(Server.run)
    assert run["auth"] is None
    for name, default in keyword_defaults(running.run_http).items():
        assert run[name] == default, name


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
    assert cfg.event_store is events
    assert isinstance(cfg.session_store, MemorySessionStore)
    assert server.drain_timeout == 0.5


def test_stores_default_to_memory_per_app() -> None:
    server = Server("stores")
    one, two = server.asgi_app().config, server.asgi_app().config
    assert isinstance(one.event_store, MemoryEventStore)
    assert one.event_store is not two.event_store


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


def test_a_store_with_a_shared_secret_gives_the_state_key() -> None:
    assert isinstance(KeyStore(), SharedSecret)
    assert not isinstance(RecordStore(), SharedSecret)
    server = Server("shared")
    server.asgi_app(session_store=KeyStore())
    assert server.state_key == b"k" * 32

    own = Server("own")
    before = own.state_key
    store = RecordStore()
    assert own.asgi_app(session_store=store).config.session_store is store
    assert own.state_key == before

    given = Server("given", state_key=b"g" * 32)
    given.asgi_app(session_store=KeyStore())
    assert given.state_key == b"g" * 32


USER_CODE = '''
from mcpkit import Server
from mcpkit.storage import SQLiteEventStore
from mcpkit.storage.sessions import Record


class Sessions:
    async def save(self, session_id: str, record: Record) -> None: ...
    async def load(self, session_id: str) -> Record | None: ...
    async def delete(self, session_id: str) -> None: ...


class NoDelete:
    async def save(self, session_id: str, record: Record) -> None: ...
    async def load(self, session_id: str) -> Record | None: ...


server = Server("typed")
app = server.asgi_app(session_store=Sessions(), event_store=SQLiteEventStore(":memory:"))
server.run("http", port=0, session_store=Sessions(), max_body=1024)
server.asgi_app(session_store=NoDelete())  # refused
server.asgi_app(response_mode="xml")  # refused
server.run("http", max_bodyy=1024)  # refused
server.run("http", session_store=NoDelete())  # refused
'''


def test_mypy_checks_the_options_and_the_users_stores(tmp_path: Path) -> None:
    errors, refused, out = mypy_verdict(USER_CODE, tmp_path)
    assert errors == refused, out
    assert "missing following \"SessionStore\" protocol member" in out
