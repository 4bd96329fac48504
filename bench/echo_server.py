"""The mcpkit benchmark peer for ../shared/bench/mcpbench.py.

    python bench/echo_server.py               echo + add over stdio
    python bench/echo_server.py --tools 200   plus 200 schema-heavy tools (suite E)
    python bench/echo_server.py --port N      Streamable HTTP on 127.0.0.1:N/mcp
"""

import sys
from typing import Annotated, Literal

from mcpkit import Server

server = Server("mcpkit-bench", "0.1.0")


@server.tool
async def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def add_heavy_tools(count: int) -> None:
    """Register ``count`` copies of a search tool with a rich, pydantic-derived schema."""
    from pydantic import BaseModel, Field

    class Filter(BaseModel):
        field: Annotated[str, Field(description="Name of the field to filter on")]
        op: Annotated[
            Literal["eq", "ne", "lt", "gt", "contains"], Field(description="Comparison operator")
        ] = "eq"
        value: Annotated[
            str | int | float | None, Field(description="Value to compare against")
        ] = None

    async def search(
        query: Annotated[str, Field(description="Free-text query", min_length=1,
                                    max_length=512)],
        limit: Annotated[int, Field(description="Maximum number of results", ge=1, le=1000)] = 10,
        offset: Annotated[int, Field(description="Number of results to skip", ge=0)] = 0,
        threshold: Annotated[
            float, Field(description="Minimum relevance score", ge=0.0, le=1.0)
        ] = 0.5,
        include_archived: Annotated[bool, Field(description="Also return archived items")] = False,
        tags: Annotated[
            list[str] | None, Field(description="Only items carrying all of these tags")
        ] = None,
        sort: Annotated[
            Literal["relevance", "newest", "oldest", "name"], Field(description="Sort order")
        ] = "relevance",
        filters: Annotated[
            list[Filter] | None, Field(description="Structured filters, AND-ed together")
        ] = None,
    ) -> str:
        return f"{query}:{limit}"

    for i in range(count):
        server.add_tool(
            search,
            name=f"search_{i:03d}",
            description=f"Tool {i}: search the catalogue shard {i} and return a short text "
            "summary of the matching items.",
        )


if __name__ == "__main__":
    if "--tools" in sys.argv:
        add_heavy_tools(int(sys.argv[sys.argv.index("--tools") + 1]))
    if "--port" in sys.argv:
        port = int(sys.argv[sys.argv.index("--port") + 1])
        mode = "json" if "--json-response" in sys.argv else "auto"
        impl = sys.argv[sys.argv.index("--http-impl") + 1] if "--http-impl" in sys.argv else "h11"
        server.run("http", port=port, response_mode=mode, http=impl)
    else:
        server.run()
