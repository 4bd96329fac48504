"""The HTTP options, declared once (``transports/http_options.py``), and how
``Server.asgi_app`` and ``Server.run("http", ...)`` take them.

Every option is a field of ``HttpOptions`` with its type, default and doc; the entry
points take them as ``**options: Unpack[HttpKeywords]``. These tests hold every public
entry point to those fields by introspection (no option written as a parameter of its
own, ``HttpKeywords`` the same names and types, ``path`` the same default), so an option
cannot be added in one place only; they run every option through ``asgi_app`` into the
app, and mypy over a user's code to see it refuse a misspelt option, a wrong value and a
store that lacks a method of its protocol.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Server
from mcpkit.cli import _parser
from mcpkit.server import running
from mcpkit.storage import MemoryEventStore, MemorySessionStore
from mcpkit.transports import http_defaults
from mcpkit.transports.http_options import HttpKeywords, HttpOptions
from mcpkit.transports.http_server import StreamableHTTPApp

from .support.typecheck import mypy_verdict

FIELDS = {f.name: f for f in dataclasses.fields(HttpOptions)}
# What the entry points take besides the HTTP options: ``path`` (the first field, a
# parameter of its own: asgi_app takes it by position), ``auth`` (wraps the app), and
# run's process-level settings (uvicorn's host, port, parser, loop, header deadline;
# logging; stdio's drain_timeout).
RUN_OWN = {"host", "port", "path", "http", "loop", "header_timeout", "log_level",
           "drain_timeout", "auth"}


def keyword_defaults(fn: Any) -> dict[str, Any]:
    return {name: p.default for name, p in inspect.signature(fn).parameters.items()
            if p.kind is p.KEYWORD_ONLY}


def options_parameter(fn: Any) -> inspect.Parameter:
    (var,) = [p for p in inspect.signature(fn).parameters.values()
              if p.kind is p.VAR_KEYWORD]
    return var


def test_the_defaults_the_cli_shows_are_the_options_defaults() -> None:
    """``http_defaults`` holds the constants the parser prints without building the
    dataclass; ``HttpOptions`` takes its defaults from them."""
    options = HttpOptions()
    assert (options.path, options.drain) == (http_defaults.PATH, http_defaults.DRAIN)
    assert options.max_stream_buffer == http_defaults.MAX_STREAM_BUFFER
    assert options.stall_timeout == http_defaults.STALL_TIMEOUT
    helps = _parser().format_help() + "".join(
        action.choices["run"].format_help() for action in _parser()._subparsers._actions  # type: ignore[union-attr]
        if isinstance(action.choices, dict) and "run" in action.choices)
    assert f"(default {http_defaults.PATH})" in helps
    assert f"(default {http_defaults.DRAIN:g})" in helps


def test_http_keywords_are_the_option_fields_with_their_types() -> None:
    keywords = {name: ref.__forward_arg__ if isinstance(ref, typing.ForwardRef) else ref
                for name, ref in HttpKeywords.__annotations__.items()}
    assert set(keywords) == set(FIELDS) - {"path"}
    assert not HttpKeywords.__required_keys__
    for name, annotation in keywords.items():
        assert annotation == FIELDS[name].type, name
    assert all(f.kw_only and f.default is not dataclasses.MISSING for f in FIELDS.values())


def test_the_entry_points_take_the_options_from_the_one_declaration() -> None:
    """No option is written out as a parameter of ``asgi_app`` or ``run`` (their
    overloads included): they come in as ``**options: Unpack[HttpKeywords]``, and
    ``path``, the one taken by name, has the field's default everywhere."""
    default_path = HttpOptions().path
    for fn in (Server.asgi_app, *typing.get_overloads(Server.asgi_app)):
        assert set(keyword_defaults(fn)) == {"auth"}, fn
        assert options_parameter(fn).annotation == "Unpack[HttpKeywords]"
        assert inspect.signature(fn).parameters["path"].default == default_path
    run = keyword_defaults(Server.run)
    assert set(run) == RUN_OWN
    assert options_parameter(Server.run).annotation == "Unpack[HttpKeywords]"
    assert run["path"] == default_path and run["auth"] is None
    for name, default in keyword_defaults(running.run_http).items():
        assert run[name] == default, name
    parsed = _parser().parse_args(["dev", "x.py"])
    assert parsed.path == default_path


def test_every_option_reaches_the_app() -> None:
    """Each field, given by name to ``asgi_app``, is what the app's options hold (a value
    other than its default; ``store`` has tests of its own: tests/test_http_app.py)."""
    events, sessions = MemoryEventStore(), MemorySessionStore()
    given: dict[str, Any] = {
        "response_mode": "sse", "allowed_hosts": ["a.example"],
        "allowed_origins": ["https://a.example"], "trusted_proxies": ["10.0.0.1"],
        "legacy_sse_path": "/old", "legacy_messages_path": "/old/messages",
        "event_store": events, "session_store": sessions}
    for name, field in FIELDS.items():
        if name not in given and name not in ("path", "store"):
            assert isinstance(field.default, bool | int | float), name
            given[name] = (not field.default if isinstance(field.default, bool)
                           else field.default + 1)
    app = Server("every").asgi_app("/every", **given)
    assert isinstance(app, StreamableHTTPApp)
    assert app.config == HttpOptions(path="/every", **given)
    assert (app.event_store, app.session_store) == (events, sessions)
    with pytest.raises(dataclasses.FrozenInstanceError):
        app.config.max_body = 1  # type: ignore[misc]
    with pytest.raises(TypeError, match="max_bodyy"):
        Server("typo").asgi_app(max_bodyy=1)  # type: ignore[call-arg]


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


def test_every_session_of_an_app_is_paced_by_its_stall_timeout() -> None:
    """A producer paced by a stream waits for its reader as long as the app's watchdog
    lets the reader stall (``stall_timeout``), not the default's 30 s: a longer
    ``stall_timeout`` must not make a paced handler give up first. Every ``HttpSession``
    comes from ``open_session``, which gives it that bound."""
    import asyncio

    async def main() -> None:
        app = Server("patient").asgi_app(stall_timeout=75.0)
        assert isinstance(app, StreamableHTTPApp)
        assert app.open_session("s").patience == 75.0
        assert app.open_session("", owner="alice").owner == "alice"
        default = Server("default").asgi_app()
        assert isinstance(default, StreamableHTTPApp)
        assert default.open_session("s").patience == FIELDS["stall_timeout"].default

    asyncio.run(main())


@pytest.mark.parametrize("legacy", [{"legacy_sse_path": "/mcp/"},
                                    {"legacy_messages_path": "/mcp"}])
def test_a_legacy_path_on_the_endpoint_is_refused(legacy: dict[str, str]) -> None:
    """A legacy SSE path equal to the MCP endpoint's would hide one of the two: refused
    when the options are built, not found as 404s in production."""
    with pytest.raises(ValueError, match="must differ from the MCP endpoint's path"):
        Server("clash").asgi_app("/mcp", **legacy)
    Server("apart").asgi_app("/mcp", legacy_sse=False, **legacy)  # legacy off: no clash
