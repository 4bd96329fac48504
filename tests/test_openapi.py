"""A server from an OpenAPI document (issue #29, item 5): ``Server.from_openapi`` with an
httpx client against a real FastAPI app served by uvicorn on loopback, the same app in
process (``Server.from_fastapi``), and hand-written 3.0/3.1 documents for what FastAPI
does not produce (``nullable``, shared and header parameters, recursion, route maps).
Every message is checked against the negotiated revision's schema (``connect``)."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

from mcpkit import Server
from mcpkit.check.lint import LintInput, lint
from mcpkit.openapi import RouteMap, from_openapi, load
from mcpkit.protocol.errors import RemoteError
from mcpkit.testing import ERAS, connect
from tests.support.http import LiveServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Item(BaseModel):
    """An item of the inventory."""

    id: int = Field(description="The item's id; pass it to inventory_get_item.")
    name: str = Field(description="What the item is called.")
    quantity: int = Field(0, description="How many are in stock.")
    note: str | None = Field(None, description="A free note, if any.")


class NewItem(BaseModel):
    name: str = Field(description="What the item is called.", max_length=100)
    quantity: int = Field(0, ge=0, description="How many are in stock.")


class Items(BaseModel):
    items: list[Item]
    total: int = Field(description="How many items matched in all.")


def inventory_app() -> FastAPI:
    app = FastAPI(title="inventory")
    stock: dict[int, Item] = {1: Item(id=1, name="bolt", quantity=40)}

    @app.get("/items", operation_id="inventory_list_items", response_model=Items)
    def list_items(limit: int = 10, contains: str | None = None) -> Items:
        """List the items in stock, optionally those whose name contains `contains`.
        Use it to find an item's id; returns the items and how many matched."""
        found = [i for i in stock.values() if contains is None or contains in i.name]
        return Items(items=found[:limit], total=len(found))

    @app.get("/items/{item_id}", operation_id="inventory_get_item", response_model=Item)
    def get_item(item_id: int) -> Item:
        """Get one item by its id. Use it after inventory_list_items gave the id;
        returns the item with its stock."""
        if item_id not in stock:
            raise HTTPException(404, f"no item {item_id}; list the items for their ids")
        return stock[item_id]

    @app.post("/items", operation_id="inventory_add_item", response_model=Item)
    def add_item(item: NewItem) -> Item:
        """Add an item to the inventory. Use it when new stock arrives; returns the
        item with its id."""
        made = Item(id=max(stock) + 1, name=item.name, quantity=item.quantity)
        stock[made.id] = made
        return made

    @app.delete("/items/{item_id}", operation_id="inventory_delete_item")
    def delete_item(item_id: int) -> dict[str, int]:
        """Delete an item by its id. Use it when an item is discontinued; returns the
        id deleted."""
        if stock.pop(item_id, None) is None:
            raise HTTPException(404, f"no item {item_id}")
        return {"deleted": item_id}

    return app


INSTRUCTIONS = ("The inventory of a hardware shop: list items to find their ids, then "
                "get, add or delete them.")


async def check_inventory(server: Server, mode: str) -> None:
    async with connect(server, mode=mode) as client:  # type: ignore[arg-type]
        tools = {t.name: t for t in await client.list_tools()}
        assert set(tools) == {"inventory_list_items", "inventory_get_item",
                              "inventory_add_item", "inventory_delete_item"}
        get = tools["inventory_get_item"]
        assert get.input_schema["required"] == ["item_id"]
        assert get.input_schema["properties"]["item_id"]["type"] == "integer"
        assert get.annotations is not None and get.annotations.read_only_hint is True
        assert get.output_schema is not None
        assert tools["inventory_delete_item"].annotations.destructive_hint is True  # type: ignore[union-attr]
        add = tools["inventory_add_item"].input_schema
        assert set(add["properties"]) == {"name", "quantity"} and add["required"] == ["name"]
        assert add["additionalProperties"] is False
        listed = await client.call_tool("inventory_list_items", {"limit": 5})
        assert listed.data.total == 1 and listed.data.items[0].name == "bolt"
        made = await client.call_tool("inventory_add_item", {"name": "nut", "quantity": 3})
        assert made.data.id == 2 and made.data.note is None
        got = await client.call_tool("inventory_get_item", {"item_id": 2})
        assert got.data.name == "nut"
        missing = await client.call_tool("inventory_get_item", {"item_id": 99})
        assert missing.is_error and "404 Not Found" in missing.text
        assert "no item 99; list the items" in missing.text
        refused = await client.call_tool("inventory_add_item", {"name": "x" * 101})
        assert refused.is_error  # the tool's schema (maxLength from the model) refuses it
        assert "name" in refused.text
        gone = await client.call_tool("inventory_delete_item", {"item_id": 2})
        assert gone.data.deleted == 2


@pytest.mark.parametrize("mode", ERAS)
async def test_a_fastapi_app_served_by_uvicorn(mode: str) -> None:
    with LiveServer(inventory_app()) as live:
        base = live.url.rsplit("/mcp", 1)[0]
        async with httpx.AsyncClient(base_url=base) as http:
            server = Server.from_openapi(inventory_app().openapi(), http,
                                         instructions=INSTRUCTIONS)
            await check_inventory(server, mode)


async def test_the_same_app_in_process() -> None:
    await check_inventory(Server.from_fastapi(inventory_app(), instructions=INSTRUCTIONS),
                          "stateful")


async def test_the_design_lint_finds_nothing_to_fix_in_the_generated_tools() -> None:
    server = Server.from_fastapi(inventory_app(), instructions=INSTRUCTIONS)
    async with connect(server) as client:
        tools = [t.to_wire() for t in await client.list_tools()]
    failed = [(f.rule, f.message) for f in lint(LintInput(tools, INSTRUCTIONS, [], [], None),
                                                "stateful") if f.verdict == "fail"]
    assert failed == []


async def test_an_api_that_cannot_be_reached_is_a_tool_error() -> None:
    async with httpx.AsyncClient(base_url="http://127.0.0.1:9") as http:
        server = Server.from_openapi(inventory_app().openapi(), http)
        async with connect(server) as client:
            result = await client.call_tool("inventory_get_item", {"item_id": 1})
    assert result.is_error and "could not reach the API" in result.text


DOC_30: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "tree", "version": "1"},
    "paths": {
        "/nodes/{node_id}": {
            "parameters": [{"name": "node_id", "in": "path", "required": True,
                            "schema": {"type": "string"}}],
            "get": {
                "operationId": "getNode",
                "summary": "One node of the tree.",
                "parameters": [{"name": "X-Trace", "in": "header",
                                "schema": {"type": "string"}},
                               {"$ref": "#/components/parameters/Depth"}],
                "responses": {"200": {"description": "ok", "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/Node"}}}}},
            },
            "put": {
                "operationId": "replace node!",
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"type": "array", "items": {"type": "string"}}}}},
                "responses": {"204": {"description": "done"}},
            },
        },
        "/nodes": {"get": {"responses": {"200": {"description": "ok"}}},
                   "post": {"operationId": "getNode",
                            "responses": {"200": {"description": "ok"}}}},
    },
    "components": {
        "parameters": {"Depth": {"name": "depth", "in": "query",
                                 "schema": {"type": "integer", "nullable": True}}},
        "schemas": {"Node": {"type": "object", "properties": {
            "id": {"type": "string"}, "label": {"type": "string", "nullable": True},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}},
    },
}


def tree_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def node(request: Request) -> Response:
        if request.method == "PUT":
            return Response(status_code=204)
        return JSONResponse({"id": request.path_params["node_id"], "label": None,
                             "children": [], "trace": request.headers.get("x-trace"),
                             "depth": request.query_params.get("depth")})

    async def nodes(request: Request) -> Response:
        return JSONResponse([{"id": "root"}])

    return Starlette(routes=[Route("/nodes/{node_id}", node, methods=["GET", "PUT"]),
                             Route("/nodes", nodes, methods=["GET", "POST"])])


async def test_a_3_0_document_with_what_fastapi_never_writes() -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=tree_app()),
                                 base_url="http://tree") as http:
        server = from_openapi(DOC_30, http)
        async with connect(server) as client:
            tools = {t.name: t for t in await client.list_tools()}
            assert set(tools) == {"getNode", "replace_node", "get_nodes", "getNode_2"}
            get = tools["getNode"]
            props = get.input_schema["properties"]
            assert set(props) == {"node_id", "X-Trace", "depth"}
            assert props["depth"]["type"] == ["integer", "null"]
            assert get.input_schema["required"] == ["node_id"]
            node = get.output_schema["$defs"]["Node"]  # type: ignore[index]
            assert node["properties"]["label"]["type"] == ["string", "null"]
            assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
            got = await client.call_tool("getNode", {"node_id": "a b?", "X-Trace": "t1",
                                                     "depth": 2})
            assert got.data.id == "a b?"  # percent-encoded on the way
            assert (got.data.trace, got.data.depth) == ("t1", "2")
            put = tools["replace_node"].input_schema
            assert put["properties"]["body"] == {"type": "array", "items": {"type": "string"}}
            done = await client.call_tool("replace_node", {"node_id": "a", "body": ["x"]})
            assert not done.is_error and done.text == ""


async def test_route_maps_make_resources_templates_and_leave_some_out() -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=tree_app()),
                                 base_url="http://tree") as http:
        server = from_openapi(DOC_30, http, route_maps=[
            RouteMap(["GET"], r"^/nodes$", "resource"),
            RouteMap(["PUT"], None, "exclude"),
            RouteMap(["GET"], r"\{node_id\}", "template")], scheme="tree",
            names={"getNode": "tree_get_node"})
        async with connect(server) as client:
            tools = {t.name for t in await client.list_tools()}
            # both getNode ids renamed (then told apart); the GET of one node has a header
            # and a query parameter, so it stays a tool rather than a template
            assert tools == {"tree_get_node", "tree_get_node_2"}
            resources = [r.uri for r in await client.list_resources()]
            assert resources == ["tree://nodes"]
            read = await client.read_resource("tree://nodes")
            assert read.contents[0].text == '[{"id":"root"}]'


def test_documents_that_cannot_be_read_are_refused() -> None:
    with pytest.raises(ValueError, match=r"not an OpenAPI 3\.x document"):
        load({"swagger": "2.0", "paths": {}})
    with pytest.raises(ValueError, match="no 'paths'"):
        load({"openapi": "3.1.0"})
    with pytest.raises(ValueError, match="not JSON"):
        load("{not json")
    with pytest.raises(ValueError, match="only references inside the document"):
        from_openapi({"openapi": "3.1.0", "paths": {"/x": {"get": {
            "parameters": [{"$ref": "other.json#/p"}], "responses": {}}}}},
            httpx.AsyncClient())
    with pytest.raises(ValueError, match="points at nothing"):
        from_openapi({"openapi": "3.1.0", "paths": {"/x": {"get": {"responses": {
            "200": {"$ref": "#/components/responses/Nope"}}}}}}, httpx.AsyncClient())


async def test_a_relayed_protocol_error_is_not_how_api_errors_arrive() -> None:
    """A 4xx is a tool result the model reads, never a JSON-RPC error."""
    server = Server.from_fastapi(inventory_app())
    async with connect(server) as client:
        result = await client.call_tool("inventory_delete_item", {"item_id": 7})
        assert result.is_error and "404" in result.text
        with pytest.raises(RemoteError):  # an unknown tool still is one
            await client.call_tool("inventory_nope", {})


async def test_tools_with_large_schemas_are_listed_in_pages_a_client_takes() -> None:
    """A page of ``tools/list`` ends before 1 MiB of tools (``MAX_PAGE_BYTES``): 40
    tools of about 100 KB of schema each (what a big OpenAPI document makes) would be
    one 4 MB answer, more than mcpkit's own client takes in one message."""
    from mcpkit.server.registry import MAX_PAGE_BYTES

    server = Server("big")
    wide = {"type": "object", "properties": {
        f"field_{i}": {"type": "string", "description": "x" * 90} for i in range(1000)}}
    for i in range(40):
        server.add_tool(lambda **kw: "ok", name=f"big_{i}", input_schema=wide)
    async with connect(server) as client:
        assert len(await client.list_tools()) == 40
        pages = [m for sender, m in client.wire.messages
                 if sender == "server" and "tools" in m.get("result", {})]
    assert len(pages) > 1
    for page in pages:
        tools = page["result"]["tools"]
        size = sum(len(orjson.dumps(t)) for t in tools)
        assert size <= MAX_PAGE_BYTES or len(tools) == 1


async def test_a_get_whose_parameters_are_all_in_its_path_is_a_template() -> None:
    """The template's read takes its variables as ``**values`` (a template function may:
    ``HandlerSpec.any_keyword``), and a function that names none and takes no
    ``**values`` is still refused at declaration."""
    doc: dict[str, Any] = {"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
                           "paths": {"/nodes/{node_id}": {"get": {
                               "operationId": "tree_node",
                               "parameters": [{"name": "node_id", "in": "path",
                                               "required": True,
                                               "schema": {"type": "string"}}],
                               "responses": {"200": {"description": "ok"}}}}}}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=tree_app()),
                                 base_url="http://tree") as http:
        server = from_openapi(doc, http, route_maps=[RouteMap(["GET"], None, "template")])
        async with connect(server) as client:
            assert [t.uri_template for t in await client.list_resource_templates()] == [
                "api://nodes/{node_id}"]
            read = await client.read_resource("api://nodes/n1")
            assert '"id":"n1"' in read.contents[0].text
    with pytest.raises(ValueError, match="lacks parameters"):
        Server("s").add_resource(lambda: "x", "x://{name}")
