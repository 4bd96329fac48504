"""One handler inspection for tools, prompts and resources (``mcpkit.server.handler``).

Every way of asking for the ``Context`` (plain, ``| None``, ``Optional``, ``Annotated``, as
a string annotation — this module uses ``from __future__ import annotations``, so every
annotation here is a string) is found the same way by all three kinds of handler; async
functions, objects with an async ``__call__`` and partials are awaited; sync ones run in a
worker thread; unresolvable hints are reported at registration. What a request handler
returns is one shape, an awaitable (``Ready`` when the result is already there).
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Generator
from typing import Annotated, Any, Optional

import anyio
import anyio.lowlevel
import pytest

from mcpkit import Context, Server, ToolError
from mcpkit.client import Client
from mcpkit.protocol.connection import (
    Connection,
    RequestReceived,
    ResponseReceived,
    SessionStarted,
)
from mcpkit.protocol.jsonrpc import RequestId
from mcpkit.protocol.lifecycle import Role
from mcpkit.server.handler import HandlerSpec, is_context_type, never_waits
from mcpkit.session import HandlerResult, Ready, Session
from mcpkit.transports.memory import memory_pair

pytestmark = pytest.mark.anyio
LIMIT = 10


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class MyContext(Context):
    """A user subclass still counts as the Context."""


@pytest.mark.parametrize("hint, expected", [
    (Context, True),
    (Context | None, True),
    (Optional[Context], True),  # noqa: UP045 - the spelling under test
    (Annotated[Context, "the request"], True),
    (Annotated[Context | None, "x"], True),
    (MyContext, True),
    (str, False),
    (Context | str, False),  # a union with something else is an argument, not the context
    (list[Context], False),
    (Any, False),
])
def test_is_context_type(hint: Any, expected: bool) -> None:
    assert is_context_type(hint) is expected


def test_spec_finds_the_context_however_it_is_written() -> None:
    async def a(x: int, ctx: Context | None = None) -> int:
        return x

    def b(ctx: Optional[Context], x: int) -> int:  # noqa: UP045
        return x

    async def c(x: int, ctx: Annotated[Context, "injected"]) -> int:
        return x

    for fn in (a, b, c):
        spec = HandlerSpec(fn)
        assert spec.context_param == "ctx", fn
        assert [p.name for p, _ in spec.parameters] == ["x"]
        assert spec.parameters[0][1] is int  # resolved from the string annotation


def test_spec_detects_what_returns_a_coroutine() -> None:
    async def coro(x: int) -> int:
        return x

    def plain(x: int) -> int:
        return x

    class AsyncCallable:
        async def __call__(self, x: int) -> int:
            return x

    class SyncCallable:
        def __call__(self, x: int) -> int:
            return x

    assert HandlerSpec(coro).is_async
    assert not HandlerSpec(plain).is_async
    assert HandlerSpec(AsyncCallable()).is_async
    assert not HandlerSpec(SyncCallable()).is_async
    assert HandlerSpec(functools.partial(coro, x=1)).is_async
    assert HandlerSpec(AsyncCallable()).name == "AsyncCallable"


def test_unresolvable_hints_are_reported_not_swallowed() -> None:
    def broken(x: NoSuchType) -> str:  # type: ignore[name-defined]  # noqa: F821
        return ""

    server = Server("t")
    for register in (server.tool, server.prompt):
        with pytest.raises(TypeError, match=r"cannot resolve the type hints of .*broken.*"
                                             r"NoSuchType"):
            register(broken)
    with pytest.raises(TypeError, match="NoSuchType"):
        server.resource("t://x")(broken)


def test_two_context_parameters_are_refused() -> None:
    def twice(a: Context, b: Context | None = None) -> str:
        return ""

    with pytest.raises(TypeError, match="takes the Context twice"):
        HandlerSpec(twice)


def _server() -> Server:
    server = Server("handlers")

    @server.tool
    async def optional_ctx(city: str, days: int = 3, ctx: Context | None = None) -> str:
        """The README's own signature."""
        assert isinstance(ctx, Context)
        return f"{city}:{days}"

    @server.tool
    def sync_tool(x: int, ctx: Annotated[Context, "the request"]) -> str:
        """Runs in a worker thread, with the context."""
        assert isinstance(ctx, Context)
        return f"{x}:{threading.current_thread() is threading.main_thread()}"

    class Greeter:
        """A prompt object whose __call__ is async."""

        __name__ = "greeter"

        async def __call__(self, name: str, ctx: Optional[Context] = None) -> str:  # noqa: UP045
            assert isinstance(ctx, Context)
            return f"Say hello to {name}."

    server.prompt(Greeter())

    @server.prompt
    def plain_prompt(topic: str, ctx: Context | None = None) -> str:
        return f"Write about {topic}."

    @server.resource("t://note/{id}")
    async def note(id: str, ctx: Context | None = None) -> str:
        assert isinstance(ctx, Context)
        return f"note {id}"

    return server


async def test_every_kind_of_handler_through_a_client() -> None:
    with anyio.fail_after(LIMIT):
        async with Client(_server()) as client:
            tools = {t.name: t for t in await client.list_tools()}
            assert set(tools["optional_ctx"].input_schema["properties"]) == {"city", "days"}
            assert tools["optional_ctx"].input_schema["required"] == ["city"]
            assert set(tools["sync_tool"].input_schema["properties"]) == {"x"}
            res = await client.call_tool("optional_ctx", {"city": "Lisbon"})
            assert not res.is_error and res.text == "Lisbon:3"
            res = await client.call_tool("sync_tool", {"x": 2})
            assert res.text == "2:False"  # not on the event loop's thread

            prompts = {p.name: p for p in await client.list_prompts()}
            assert [a.name for a in prompts["greeter"].arguments or []] == ["name"]
            assert [a.name for a in prompts["plain_prompt"].arguments or []] == ["topic"]
            got = await client.get_prompt("greeter", {"name": "Ada"})
            assert got.messages[0].content.text == "Say hello to Ada."  # type: ignore[union-attr]
            got = await client.get_prompt("plain_prompt", {"topic": "tides"})
            assert got.messages[0].content.text == "Write about tides."  # type: ignore[union-attr]

            read = await client.read_resource("t://note/7")
            assert read.contents[0].text == "note 7"  # type: ignore[union-attr]


async def test_fixed_value_resources_are_read_without_a_thread_hop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server("fixed")
    server.add_resource("static text", "t://text")
    server.add_resource(b"\x00\x01", "t://blob", mime_type="application/octet-stream")

    def no_threads(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a fixed resource was read in a worker thread")

    monkeypatch.setattr("mcpkit.server.handler.anyio.to_thread.run_sync", no_threads)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            text = await client.read_resource("t://text")
            assert text.contents[0].text == "static text"  # type: ignore[union-attr]
            blob = await client.read_resource("t://blob")
            assert blob.contents[0].blob == "AAE="  # type: ignore[union-attr]


# ---------------------------------------------------------------- functions that never wait

CALLS = contextvars.ContextVar("CALLS", default=0)


async def _no_await(x: int) -> int:
    return x + 1


async def _awaits(x: int) -> int:
    await anyio.lowlevel.checkpoint()
    return x


async def _async_for(x: int) -> int:
    async for _ in _agen():
        pass
    return x


async def _async_with(x: int) -> int:
    async with anyio.Lock():
        return x


async def _agen() -> Any:
    yield 1


async def _defines_an_awaiting_helper(x: int) -> int:
    async def helper() -> None:  # its own code object; never awaited here
        await anyio.lowlevel.checkpoint()

    del helper
    return x


def test_never_waits_is_judged_from_the_functions_own_code() -> None:
    assert never_waits(_no_await)
    assert never_waits(_defines_an_awaiting_helper)
    for fn in (_awaits, _async_for, _async_with):
        assert not never_waits(fn), fn
    assert not never_waits(lambda x: x)  # not a coroutine function
    assert not never_waits(_agen)  # an async generator
    assert not never_waits(functools.partial(_no_await, 1))  # wrapped: not judged

    class AsyncCallable:
        async def __call__(self, x: int) -> int:
            return x

    assert not never_waits(AsyncCallable())
    assert HandlerSpec(_no_await).never_waits and not HandlerSpec(_awaits).never_waits


def _inline_server() -> Server:
    server = Server("inline")

    @server.tool
    async def bump(x: int) -> int:
        """Never waits: answered inline."""
        CALLS.set(CALLS.get() + 1)  # must not leak into the next call's context
        return x + CALLS.get()

    @server.tool
    async def refuse(x: int) -> int:
        """Never waits, fails for the model."""
        raise ToolError(f"{x} is not allowed; pick another number.")

    @server.tool
    async def crash(x: int) -> int:
        """Never waits, has a bug."""
        raise KeyError("secret detail")

    @server.tool
    async def waits(x: int) -> int:
        """Waits once: runs in a task."""
        await anyio.lowlevel.checkpoint()
        return x

    return server


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # counts asyncio tasks
async def test_a_tool_that_never_waits_is_answered_without_a_task(
        caplog: pytest.LogCaptureFixture) -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    created: list[str] = []
    original = loop.get_task_factory()

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> Any:
        created.append(getattr(coro, "__qualname__", repr(coro)))
        if original is not None:
            return original(loop, coro, **kw)
        return asyncio.Task(coro, loop=loop, **kw)

    with anyio.fail_after(LIMIT):
        async with Client(_inline_server()) as client:
            loop.set_task_factory(counting)
            try:
                for i in range(3):
                    res = await client.call_tool("bump", {"x": i})
                    assert not res.is_error and res.structured_content == {"result": i + 1}
                handler_tasks = [n for n in created if "_run_handler" in n]
                assert handler_tasks == [], created
                res = await client.call_tool("waits", {"x": 5})
                assert res.structured_content == {"result": 5}
                assert [n for n in created if "_run_handler" in n], created
            finally:
                loop.set_task_factory(original)
            res = await client.call_tool("refuse", {"x": 4})
            assert res.is_error and res.text == "4 is not allowed; pick another number."
            with caplog.at_level("ERROR", logger="mcpkit"):
                res = await client.call_tool("crash", {"x": 1})
            assert res.is_error and "failed unexpectedly (KeyError)" in res.text
            assert "secret detail" not in res.text
            assert any("crash" in r.getMessage() and r.exc_info for r in caplog.records)
    assert CALLS.get() == 0


async def test_a_tool_that_never_waits_in_the_stateless_revision() -> None:
    with anyio.fail_after(LIMIT):
        async with Client(_inline_server(), mode="stateless") as client:
            res = await client.call_tool("bump", {"x": 1})
            assert not res.is_error and res.structured_content == {"result": 2}
            res = await client.call_tool("refuse", {"x": 2})
            assert res.is_error


class _Later:
    """An awaitable that is not a coroutine, and suspends once before its result."""

    def __await__(self) -> Generator[Any, None, dict[str, Any]]:
        yield from anyio.lowlevel.checkpoint().__await__()
        return {"prompts": [], "later": True}


async def test_a_request_handler_returns_an_awaitable_ready_is_answered_inline(
        anyio_backend: str) -> None:
    """One handler shape: whatever awaitable a handler returns is awaited for the answer;
    a ``Ready`` (the result already there) is answered without starting a task."""
    import asyncio

    def on_request(session: Session, event: RequestReceived) -> HandlerResult:
        if event.method == "tools/list":
            return Ready({"tools": [], "now": True})
        return _Later()

    ours, theirs = memory_pair()
    server = Connection(Role.SERVER, info={"name": "s", "version": "0"},
                        capabilities={"tools": {}, "prompts": {}})
    session = Session(server, ours, on_request=on_request)
    client = Connection(Role.CLIENT, info={"name": "c", "version": "0"})
    created: list[str] = []
    loop = asyncio.get_running_loop() if anyio_backend == "asyncio" else None
    original = None if loop is None else loop.get_task_factory()

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> Any:
        created.append(getattr(coro, "__qualname__", repr(coro)))
        return asyncio.Task(coro, loop=loop, **kw)

    async def answer_to(rid: RequestId) -> Any:
        await theirs.send(client.data_to_send())
        while True:
            for event in client.receive_data(await theirs.receive()):
                if isinstance(event, ResponseReceived) and event.id == rid:
                    return event.result
                if isinstance(event, SessionStarted):  # (initialize's answer)
                    return event
            await theirs.send(client.data_to_send())

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            await tg.start(session.run)
            assert isinstance(await answer_to(client.start_handshake()), SessionStarted)
            if loop is not None:
                loop.set_task_factory(counting)
            try:
                listed = await answer_to(client.send_request("tools/list"))
                assert listed == {"tools": [], "now": True}
                assert not [n for n in created if "_run_handler" in n], created
                later = await answer_to(client.send_request("prompts/list"))
                assert later == {"prompts": [], "later": True}
                if loop is not None:
                    assert [n for n in created if "_run_handler" in n], created
            finally:
                if loop is not None:
                    loop.set_task_factory(original)
            await theirs.aclose()
        await ours.aclose()


class Point:
    x: int


def test_string_hints_resolve_as_get_type_hints_does() -> None:
    """``resolve_hints`` evaluates string annotations itself, each distinct text compiled
    once (issue #28); what it returns is what ``typing.get_type_hints`` returns, and what
    needs more (a quoted name inside a hint, a name only the closure has) still gets it."""
    import typing

    from mcpkit.server.handler import resolve_hints

    def plain(a: int, b: str | None, c: list[Point], d: Annotated[int, "doc"],
              e: dict[str, Any] = {}) -> None:  # noqa: B006 (never called)
        """(a hint of every kind)"""

    def quoted(p: list["Point"]) -> "Point":  # noqa: UP037 (the case under test)
        return p[0]

    @functools.wraps(plain)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        return None

    for fn in (plain, quoted, wrapper):
        assert resolve_hints(fn) == typing.get_type_hints(fn, include_extras=True), fn

    def make() -> Any:
        class Local:
            pass

        def uses_local(item: Local) -> Local:
            return item if isinstance(item, Local) else Local()  # (Local: a closure name)

        return uses_local, Local

    uses_local, local = make()
    assert resolve_hints(uses_local) == {"item": local, "return": local}  # the closure's
