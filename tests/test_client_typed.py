"""A client that is easy to hold right: typed construction, typed results, one naming style.

- Construction: ``Stdio``, ``Http`` and a ``Server`` object as targets, the string and list
  shortcuts, and a ``TypeError`` naming the transport for an option given where it does not
  apply; ``mcpkit.Client`` loaded lazily from the package root.
- Results: ``CallToolResult.data`` (``structuredContent``, checked against the tool's
  ``outputSchema``) read as a pydantic model, a dataclass, a TypedDict or a primitive type;
  ``ToolError`` on request for an ``is_error`` result; a result that is not the requested
  type, or that breaks its ``outputSchema``, is an ``OutputSchemaError``.
- Names: tool annotations, icons, ``execution`` and content annotations are snake_case
  attributes; ``to_wire()`` gives the wire's JSON back, valid against the official schema.

Both eras (2025-11-25 with a handshake, 2026-07-28 stateless); every message the client
sends is validated against the negotiated revision's schema (``TappedClient``).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

import mcpkit
from mcpkit import Server, ToolError
from mcpkit.client import Client, Http, OutputSchemaError, Stdio
from mcpkit.client import types as t
from mcpkit.client.connect import transport_for
from mcpkit.client.results import Structured, structured

from .support.http import LiveServer
from .support.schemas import validate
from .support.tap import TappedClient
from .support.typecheck import mypy_verdict
from .test_client_tasks import EXTENSION_ONLY

ROOT = Path(__file__).resolve().parents[1]
EVERYTHING = [sys.executable, str(ROOT / "examples" / "everything.py")]
LIMIT = 10
ERAS = [("stateful", "2025-11-25"), ("stateless", "2026-07-28")]

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=ERAS, ids=[v for _, v in ERAS])
def era(request: pytest.FixtureRequest) -> tuple[str, str]:
    return request.param  # type: ignore[no-any-return]


class Point(BaseModel):
    x: int
    y: int


@dataclass
class Box:
    width: int
    height: int


class Pair(TypedDict):
    name: str
    count: int


def typed_server() -> Server:
    server = Server("typed")

    @server.tool(annotations={"readOnlyHint": True, "idempotentHint": True, "title": "Point"},
                 icons=[{"src": "https://example.com/p.png", "mimeType": "image/png",
                         "sizes": ["48x48"]}])
    def point(x: int = 1) -> Point:
        """A point on the diagonal."""
        return Point(x=x, y=x)

    @server.tool
    def box() -> Box:
        """A box."""
        return Box(width=3, height=4)

    @server.tool
    def pair() -> Pair:
        """A pair."""
        return {"name": "n", "count": 2}

    @server.tool
    def count() -> int:
        """A number (travels wrapped as {"result": 7})."""
        return 7

    @server.tool
    def scores() -> list[float]:
        """Numbers."""
        return [0.5, 1.5]

    @server.tool
    def words() -> str:
        """Text only: no structuredContent."""
        return "just text"

    @server.tool
    def fail(why: str = "no such point") -> Point:
        """Always fails, with a message for the model."""
        raise ToolError(f"{why}: try x=1")

    @server.tool(task="optional")
    def task_fail() -> Point:
        """Fails too, perhaps as a task."""
        raise ToolError("no such point, as a task")

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    async def liar() -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "{}"}],
                "structuredContent": {"n": "not a number"}, "isError": False}

    server.add_tool(liar, output_schema=schema)
    return server


@asynccontextmanager
async def typed_client(era: tuple[str, str], allow: tuple[str, ...] = (),
                       **options: Any) -> AsyncIterator[TappedClient]:
    mode, version = era
    client = TappedClient(typed_server(), mode=mode, protocol_version=version, timeout=LIMIT,
                          **options)
    with anyio.fail_after(LIMIT):
        async with client:
            assert client.protocol_version == version
            yield client
    client.wire.assert_clean(allow)


# ---------------------------------------------------------------------- construction


def test_shortcuts_name_their_transport() -> None:
    http = transport_for("https://mcp.example.com/mcp")
    assert isinstance(http, Http) and http.url == "https://mcp.example.com/mcp"
    stdio = transport_for("python server.py --flag 'a b'")
    assert isinstance(stdio, Stdio) and stdio.command == ["python", "server.py", "--flag", "a b"]
    listed = transport_for(["python", "server.py"])
    assert isinstance(listed, Stdio) and listed.command == ["python", "server.py"]
    server = typed_server()
    assert transport_for(server) is server
    given = Stdio(["x"], env={"A": "1"}, cwd=ROOT)
    assert transport_for(given) is given and given.cwd == str(ROOT)
    assert Client("http://127.0.0.1:1/mcp").transport.url == "http://127.0.0.1:1/mcp"  # type: ignore[union-attr]


@pytest.mark.parametrize(("make", "message"), [
    (lambda: Client("https://h/mcp", env={"A": "1"}),
     r"Client does not take 'env': env= is an option of Stdio\(command, env=...\)"),
    (lambda: Client(typed_server(), headers={"x": "y"}),
     r"Client does not take 'headers': headers= is an option of Http\(url, headers=...\)"),
    (lambda: Client("python s.py", auth=object(), cwd="/"),
     r"'auth', 'cwd'.*Http\(url, auth=...\).*Stdio\(command, cwd=...\)"),
    (lambda: Stdio("python s.py", headers={}),
     r"Stdio does not take 'headers': headers= is an option of Http"),
    (lambda: Http("https://h/mcp", env={}, stderr=None),
     r"Http does not take 'env', 'stderr': env= is an option of Stdio"),
    (lambda: Stdio("python s.py", timeout=3),
     r"timeout= is no option of Stdio \(a Client option goes to Client\(target, timeout"),
    (lambda: Client(42),
     r"Client cannot talk to a int: give it a Server, Stdio\(command\), Http\(url\)"),
    (lambda: Stdio([b"python"]), r"Stdio takes a command: a list of strings"),
])
def test_an_option_where_it_does_not_apply_is_a_type_error(make: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        make()


def test_a_transport_without_what_it_needs_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="Stdio needs a command to start: it is empty"):
        Stdio("   ")
    with pytest.raises(ValueError, match="Http needs an http:// or https:// URL, got 'ftp://h'"):
        Http("ftp://h")


def test_the_package_root_offers_client_lazily() -> None:
    code = ("import sys, mcpkit\n"
            "assert 'mcpkit.client' not in sys.modules and 'pydantic' not in sys.modules\n"
            "from mcpkit import Client, Http, Stdio\n"
            "import mcpkit.client as c\n"
            "assert (Client, Http, Stdio) == (c.Client, c.Http, c.Stdio)\n"
            "try:\n    mcpkit.Nope\nexcept AttributeError as e:\n    print(e)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "module 'mcpkit' has no attribute 'Nope'"
    assert mcpkit.Client is Client and "Client" in mcpkit.__all__


async def test_stdio_transport_runs_the_command_with_its_env_and_cwd(
        era: tuple[str, str], tmp_path: Path) -> None:
    mode, version = era
    script = tmp_path / "where.py"
    script.write_text(
        "import os\nfrom mcpkit import Server\nserver = Server('where')\n"
        "@server.tool\ndef where() -> dict[str, str]:\n"
        "    return {'cwd': os.getcwd(), 'flag': os.environ.get('WHERE_FLAG', '')}\n"
        "server.run()\n")
    target = Stdio([sys.executable, script], env={"WHERE_FLAG": "on"}, cwd=tmp_path,
                   stderr=subprocess.DEVNULL)
    client = TappedClient(target, mode=mode, protocol_version=version, timeout=LIMIT)
    with anyio.fail_after(LIMIT):
        async with client:
            assert client.protocol_version == version
            res = await client.call_tool("where", {})
    assert res.data == {"cwd": str(tmp_path), "flag": "on"}
    client.wire.assert_clean()


async def test_http_transport_sends_its_headers(era: tuple[str, str]) -> None:
    mode, version = era
    seen: list[str | None] = []
    app = typed_server().asgi_app()

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append(dict(scope["headers"]).get(b"x-team", b"").decode() or None)
        await app(scope, receive, send)

    with LiveServer(recording) as live:
        client = TappedClient(Http(live.url, headers={"X-Team": "blue"}), mode=mode,
                              protocol_version=version, timeout=LIMIT)
        with anyio.fail_after(LIMIT):
            async with client:
                res = await client.call_tool("point", {"x": 2}, result_type=Point)
        assert res.data == Point(x=2, y=2)
    assert seen and set(seen) == {"blue"}
    client.wire.assert_clean()


# ---------------------------------------------------------------------- typed results


async def test_data_is_read_as_the_requested_type(era: tuple[str, str]) -> None:
    async with typed_client(era) as client:
        point = await client.call_tool("point", {"x": 5}, result_type=Point)
        assert point.data == Point(x=5, y=5) and isinstance(point.data, Point)
        box = await client.call_tool("box", result_type=Box)
        assert box.data == Box(width=3, height=4)
        pair = await client.call_tool("pair", result_type=Pair)
        assert pair.data == {"name": "n", "count": 2}
        count = await client.call_tool("count", result_type=int)
        assert count.data == 7 and count.structured_content == {"result": 7}
        scores = await client.call_tool("scores", result_type=list[float])  # type: ignore[arg-type]
        assert scores.data == [0.5, 1.5]
        assert (await client.call_tool("point", result_type=Any)).data == {"x": 1, "y": 1}  # type: ignore[arg-type]
        assert (await client.call_tool("point", result_type=dict)).data == {"x": 1, "y": 1}
        # without a type, in process: the tool's declared return type
        plain = await client.call_tool("point")
        assert plain.data == Point(x=1, y=1) and isinstance(plain.data, Point)
        assert (await client.call_tool("count")).data == 7  # unwrapped, as declared
        assert (await client.call_tool("pair")).data == {"name": "n", "count": 2}
        assert (await client.call_tool("words")).data == "just text"  # declared -> str


async def test_data_without_a_type_reads_as_attributes_over_a_transport(
        era: tuple[str, str]) -> None:
    """Out of process the client has the JSON only: ``.data`` is its objects as
    ``Structured`` dicts whose keys read as attributes (#29 item 4)."""
    mode, version = era
    with LiveServer(typed_server().asgi_app()) as live:
        client = TappedClient(live.url, mode=mode, protocol_version=version, timeout=LIMIT)
        with anyio.fail_after(LIMIT):
            async with client:
                point = await client.call_tool("point", {"x": 3})
                count = await client.call_tool("count")
                typed = await client.call_tool("point", {"x": 3}, result_type=Point)
    assert point.data.x == 3 and point.data == {"x": 3, "y": 3}
    assert isinstance(point.data, Structured) and point.data == point.structured_content
    assert count.data.result == 7  # a wrapped value: the schema alone cannot say so
    assert isinstance(typed.data, Point)  # result_type= keeps its checked conversion
    with pytest.raises(AttributeError, match=r"no field 'z'; it has 'x', 'y'"):
        _ = point.data.z
    client.wire.assert_clean()


def test_structured_views_nest_and_compare_as_the_json() -> None:
    raw = {"notes": [{"id": 1, "tags": ["a"]}], "items": [{"id": 2}], "keys": 3,
           "first-name": "Ada", "total": {"n": 1}}
    data = structured(raw)
    assert data.notes[0].id == 1 and data.notes[0].tags == ["a"] and data.total.n == 1
    assert data.items[0].id == 2 and data.keys == 3  # fields, whatever their names
    assert data["first-name"] == "Ada" and "first-name" in data and len(data) == 5
    assert data == raw and raw == data and list(data) == list(raw)
    assert data != {"other": 1} and data != [1] and data == structured(raw)
    assert "first-name" not in dir(data) and "notes" in dir(data)
    with pytest.raises(AttributeError, match="read-only"):
        data.total.n = 2
    with pytest.raises(TypeError):
        hash(data)


async def test_data_that_is_not_the_requested_type_is_an_output_schema_error(
        era: tuple[str, str]) -> None:
    async with typed_client(era) as client:
        with pytest.raises(OutputSchemaError, match=r"tool 'point' returned structuredContent "
                           r"that is not a Box: width: Field required"):
            await client.call_tool("point", result_type=Box)
        with pytest.raises(OutputSchemaError, match=r"keys \['x', 'y'\]; a int travels as "
                           r"\{\"result\": value\}"):
            await client.call_tool("point", result_type=int)
        with pytest.raises(OutputSchemaError, match="not a str: <value>: Input should be a "
                           "valid string"):
            await client.call_tool("count", result_type=str)
        with pytest.raises(OutputSchemaError, match="tool 'words' returned no "
                           "structuredContent, so there is no Point to read"):
            await client.call_tool("words", result_type=Point)
        # a server breaking its own outputSchema: caught whether a type was asked or not
        with pytest.raises(OutputSchemaError, match="does not match its outputSchema"):
            await client.call_tool("liar")
        with pytest.raises(OutputSchemaError, match="does not match its outputSchema"):
            await client.call_tool("liar", result_type=dict)
        assert (await client.call_tool("point", result_type=Point)).data.x == 1  # still usable


async def test_an_error_result_raises_tool_error_when_asked(era: tuple[str, str]) -> None:
    async with typed_client(era) as client:
        plain = await client.call_tool("fail", result_type=Point)
        assert plain.is_error and plain.data is None and "no such point" in plain.text
        with pytest.raises(ToolError, match=r"^gone: try x=1$") as caught:
            await client.call_tool("fail", {"why": "gone"}, raise_on_error=True)
        assert isinstance(caught.value.result, t.CallToolResult)
        assert caught.value.result.is_error
    async with typed_client(era, raise_on_error=True) as client:  # the client's default
        with pytest.raises(ToolError, match="no such point"):
            await client.call_tool("fail")
        assert (await client.call_tool("fail", raise_on_error=False)).is_error
        assert (await client.call_tool("count", result_type=int)).data == 7


async def test_a_task_result_is_typed_too(era: tuple[str, str]) -> None:
    async with typed_client(era, allow=EXTENSION_ONLY) as client:
        if client.stateless_version is None:
            await client.list_tools()  # 2025-11-25: a task needs the tool's taskSupport
        handle = await client.call_tool("task_fail", task=True, raise_on_error=True)
        with pytest.raises(ToolError, match="no such point, as a task"):
            await handle.result(LIMIT)
        # a task the server chose to create is followed, and read the same way
        with pytest.raises(ToolError, match="no such point, as a task"):
            await client.call_tool("task_fail", raise_on_error=True)


# ---------------------------------------------------------------------- one naming style


async def test_listed_objects_are_snake_case_and_go_back_to_the_wire(
        era: tuple[str, str]) -> None:
    async with typed_client(era) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
        version = client.protocol_version
    point = tools["point"]
    assert point.annotations == t.ToolAnnotations(read_only_hint=True, idempotent_hint=True,
                                                  title="Point")
    assert point.annotations.destructive_hint is None
    assert point.icons is not None and point.icons[0].mime_type == "image/png"
    assert point.icons[0].sizes == ["48x48"]
    if version == "2025-11-25":
        assert tools["task_fail"].execution == t.ToolExecution(task_support="optional")
        assert tools["task_fail"].task_support == "optional"
    assert tools["box"].task_support == "forbidden"
    wire = point.to_wire()
    assert wire["annotations"] == {"readOnlyHint": True, "idempotentHint": True,
                                   "title": "Point"}
    assert wire["icons"] == [{"src": "https://example.com/p.png", "mimeType": "image/png",
                              "sizes": ["48x48"]}]
    for tool in tools.values():
        validate(version, "Tool", tool.to_wire())  # raises SchemaViolation


def test_content_and_resource_annotations_are_typed() -> None:
    block = {"type": "text", "text": "hi", "annotations": {
        "audience": ["user"], "priority": 0.5, "lastModified": "2026-01-01T00:00:00Z"}}
    result: t.CallToolResult[Any] = t.CallToolResult.from_wire(
        {"content": [block], "isError": False})
    text = result.content[0]
    assert isinstance(text, t.TextContent) and text.annotations is not None
    assert text.annotations.last_modified == "2026-01-01T00:00:00Z"
    assert text.annotations.audience == ["user"]
    assert text.to_wire() == block
    resource = t.Resource.from_wire({"uri": "file:///a", "name": "a", "annotations": {
        "priority": 1}, "icons": [{"src": "data:,x", "theme": "dark"}]})
    assert resource.annotations and resource.annotations.priority == 1
    assert resource.icons and resource.icons[0].theme == "dark"
    info = t.InitializeResult.from_wire({
        "protocolVersion": "2025-11-25", "capabilities": {},
        "serverInfo": {"name": "s", "version": "1", "websiteUrl": "https://e.com"}})
    assert info.server_info.website_url == "https://e.com"
    validate("2025-11-25", "InitializeResult", info.to_wire())
    # a server's extra fields survive, under their own names
    odd = t.ToolAnnotations.from_wire({"readOnlyHint": False, "xHint": 1})
    assert odd.read_only_hint is False and odd.to_wire() == {"readOnlyHint": False, "xHint": 1}


async def test_a_malformed_annotation_is_an_invalid_result() -> None:
    server = Server("bad")

    def odd() -> str:
        return ""

    # mcpkit refuses this at declaration (tests/test_declared.py); a server that lists it
    # anyway is made by hand
    server.add_tool(odd).definition["annotations"] = {"readOnlyHint": "very"}

    from mcpkit.client import InvalidResult

    async with Client(server, timeout=LIMIT) as client:
        with pytest.raises(InvalidResult, match=r"tools/list is malformed: "
                           r"annotations\.readOnlyHint: should be a boolean"):
            await client.list_tools()


# ---------------------------------------------------------------------- for type checkers

USER_CODE = '''
from typing import Any, assert_type

from pydantic import BaseModel

from mcpkit import Client, Http, Server, Stdio
from mcpkit.client import types as t


class Point(BaseModel):
    x: int


async def main(server: Server) -> None:
    async with Client(server) as client:
        point = await client.call_tool("p", result_type=Point)
        assert_type(point, t.CallToolResult[Point])
        assert_type(point.data.x, int)
        assert_type((await client.call_tool("n", result_type=int)).data, int)
        assert_type(await client.call_tool("n"), t.CallToolResult[Any])
        point.data.y  # refused
    Client(Http("https://h/mcp", headers={"a": "b"}), timeout=3)
    Client(Stdio("python s.py", env={"A": "1"}, cwd="/"))
    Client("https://h/mcp", headers={"a": "b"})  # refused
    Client(server, env={"A": "1"})  # refused
    Stdio("python s.py", headers={"a": "b"})  # refused
    Http("https://h/mcp", cwd="/")  # refused
    Client(server, mode="statefull")  # refused
'''


def test_mypy_sees_typed_data_and_refuses_misplaced_options(tmp_path: Path) -> None:
    errors, refused, out = mypy_verdict(USER_CODE, tmp_path)
    assert errors == refused, out
