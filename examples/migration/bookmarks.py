"""A bookmarks server written for FastMCP 4.x, ported to mcpkit (docs/migration.md).

What changed from the FastMCP original, line for line: ``from fastmcp import Context,
FastMCP`` -> ``from mcpkit import Context, Server``, ``FastMCP("bookmarks")`` ->
``Server("bookmarks")`` (named ``mcp`` still, so nothing else had to change),
``fastmcp.exceptions.ToolError`` -> ``mcpkit.ToolError``, and the health route's
``starlette.requests``/``responses`` imports, which stay Starlette's. Tags, enabling and
disabling them, ``@mcp.custom_route``, ``ctx.elicit(..., response_type=bool)`` and the
pydantic return models are FastMCP's spelling, unchanged. ``test_bookmarks.py`` beside
it is the original's test module with the same changes to its imports.

    python examples/migration/bookmarks.py                 # stdio
    mcpkit run --http examples/migration/bookmarks.py      # http://127.0.0.1:8000/mcp
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import JSONResponse

from mcpkit import Context, Server, ToolError

mcp = Server("bookmarks", instructions="The user's bookmarks. Search before adding.")
BOOKMARKS: dict[int, Bookmark] = {}


class Bookmark(BaseModel):
    id: int = Field(description="The bookmark's id; pass it to bookmarks_delete.")
    url: str
    title: str
    tags: list[str] = []


class Found(BaseModel):
    bookmarks: list[Bookmark]
    total: int


@mcp.tool(tags={"write"})
def bookmarks_add(url: str, title: str, tags: list[str] | None = None) -> Bookmark:
    """Save a bookmark. Returns it with its id.

    Args:
        url: The page's address, http(s).
        title: A short title.
        tags: Optional lowercase tags.
    """
    if not url.startswith(("http://", "https://")):
        raise ToolError(f"url must start with http:// or https://, got {url[:40]!r}")
    mark = Bookmark(id=max(BOOKMARKS, default=0) + 1, url=url, title=title,
                    tags=sorted({t.lower() for t in tags or []}))
    BOOKMARKS[mark.id] = mark
    return mark


@mcp.tool(tags={"read"}, annotations={"readOnlyHint": True})
def bookmarks_search(query: str = "", tag: str | None = None, limit: int = 10) -> Found:
    """Bookmarks whose title or URL contains ``query`` (all when empty), optionally
    with ``tag``, newest first."""
    hits = [b for b in reversed(BOOKMARKS.values())
            if query.lower() in (b.title + " " + b.url).lower()
            and (tag is None or tag in b.tags)]
    return Found(bookmarks=hits[:limit], total=len(hits))


@mcp.tool(tags={"write", "admin"}, annotations={"destructiveHint": True})
async def bookmarks_delete(bookmark_id: int, ctx: Context) -> str:
    """Delete a bookmark after the user confirms."""
    if bookmark_id not in BOOKMARKS:
        raise ToolError(f"no bookmark {bookmark_id}; call bookmarks_search for the ids")
    answer = await ctx.elicit(f"Delete {BOOKMARKS[bookmark_id].title!r}?",
                              response_type=bool)
    if answer.action != "accept" or not answer.data:
        return "kept"
    del BOOKMARKS[bookmark_id]
    return "deleted"


@mcp.tool(tags={"admin"})
async def bookmarks_unlock(ctx: Context) -> str:
    """Show this session the admin tools."""
    await ctx.enable_components(tags={"admin"})
    return "admin tools unlocked"


@mcp.resource("bookmarks://{bookmark_id}", tags={"read"}, mime_type="application/json")
def bookmark(bookmark_id: str) -> Bookmark:
    """One bookmark as JSON."""
    return BOOKMARKS[int(bookmark_id)]


@mcp.custom_route("/health", methods=["GET"])
async def health(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok", "bookmarks": len(BOOKMARKS)})


mcp.disable(tags={"admin"})
mcp.enable(names={"bookmarks_unlock"})  # the one admin tool everyone sees

if __name__ == "__main__":
    mcp.run()
