"""The FastMCP bookmarks server's tests, run against its mcpkit port (``bookmarks.py``).

Written as FastMCP's were (pytest-asyncio, a ``Client`` on the server object in
memory, ``result.data`` read by attribute); what changed is the imports
(``fastmcp.Client`` -> ``mcpkit.Client``, ``fastmcp.exceptions.ToolError`` ->
``mcpkit.ToolError``) and the client's options, as docs/migration.md lists them:
FastMCP's ``elicitation_handler(message, response_type, params, context)`` returning the
data is mcpkit's ``elicitation(params)`` returning the result (``{"action": ...,
"content": ...}``), and FastMCP's client raises ``ToolError`` for a failed call by
default, mcpkit's when given ``raise_on_error=True``. Run: ``pytest -c
examples/migration/pytest.ini examples/migration``.
"""

import httpx
import pytest
from bookmarks import BOOKMARKS, mcp

from mcpkit import Client, ToolError


@pytest.fixture(autouse=True)
def empty():
    BOOKMARKS.clear()


def confirm(params):
    return {"action": "accept", "content": {"value": True}}


@pytest.fixture
async def client():
    async with Client(mcp, elicitation=confirm, raise_on_error=True) as client:
        yield client


async def test_add_and_search(client):
    added = await client.call_tool("bookmarks_add", {
        "url": "https://mcpkit.invalid", "title": "mcpkit", "tags": ["Python", "mcp"]})
    assert added.data.id == 1
    assert added.data.tags == ["mcp", "python"]
    await client.call_tool("bookmarks_add", {"url": "https://example.com", "title": "x"})
    found = await client.call_tool("bookmarks_search", {"query": "mcpkit"})
    assert found.data.total == 1
    assert found.data.bookmarks[0].url == "https://mcpkit.invalid"
    tagged = await client.call_tool("bookmarks_search", {"tag": "python"})
    assert [b.id for b in tagged.data.bookmarks] == [1]


async def test_a_bad_url_is_a_tool_error(client):
    with pytest.raises(ToolError, match="url must start with http"):
        await client.call_tool("bookmarks_add", {"url": "ftp://x", "title": "x"})


async def test_admin_tools_are_hidden_until_unlocked(client):
    names = {t.name for t in await client.list_tools()}
    assert names == {"bookmarks_add", "bookmarks_search", "bookmarks_unlock"}
    await client.call_tool("bookmarks_add", {"url": "https://a.example", "title": "a"})
    await client.call_tool("bookmarks_unlock", {})
    assert "bookmarks_delete" in {t.name for t in await client.list_tools()}
    deleted = await client.call_tool("bookmarks_delete", {"bookmark_id": 1})
    assert deleted.data == "deleted"
    assert BOOKMARKS == {}


async def test_other_sessions_stay_locked(client):
    await client.call_tool("bookmarks_unlock", {})
    async with Client(mcp) as other:
        assert "bookmarks_delete" not in {t.name for t in await other.list_tools()}


async def test_a_bookmark_is_a_resource(client):
    await client.call_tool("bookmarks_add", {"url": "https://a.example", "title": "a"})
    contents = await client.read_resource("bookmarks://1")
    assert '"title":"a"' in contents.contents[0].text.replace(" ", "")


async def test_health_route():
    transport = httpx.ASGITransport(app=mcp.asgi_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        response = await http.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "bookmarks": 0}
