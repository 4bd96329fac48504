"""A to-do server written with the official MCP Python SDK 2.x (``MCPServer``).

The "before" half of the migration guide (docs/migration.md): ``mcpkit_todo.py`` beside it
is the same server converted to mcpkit, and ``tests/test_migration.py`` runs both and checks
that they answer the same calls the same way.

    python examples/migration/sdk_todo.py        # stdio
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from pydantic import BaseModel

mcp = MCPServer("todo", instructions="The user's to-do list. List before adding.")
TASKS: dict[int, str] = {}


class Task(BaseModel):
    id: int
    text: str


@mcp.tool(annotations={"readOnlyHint": False})
async def todo_add(text: str, ctx: Context) -> Task:
    """Add a task to the to-do list. Returns it with its id."""
    if not text.strip():
        raise ToolError("text is empty; say what the task is.")
    task = Task(id=len(TASKS) + 1, text=text.strip())
    TASKS[task.id] = task.text
    await ctx.info(f"added task {task.id}")
    return task


@mcp.tool(annotations={"readOnlyHint": True})
def todo_list() -> list[Task]:
    """Every task on the list, oldest first."""
    return [Task(id=i, text=t) for i, t in TASKS.items()]


@mcp.resource("todo://{task_id}", mime_type="text/plain")
def task(task_id: str) -> str:
    """One task's text."""
    if not task_id.isdigit() or int(task_id) not in TASKS:
        raise ResourceNotFoundError(f"no task todo://{task_id}")
    return TASKS[int(task_id)]


@mcp.prompt()
def plan_day(focus: str) -> str:
    """Ask the model to plan the day around the to-do list."""
    return f"Read my to-do list with todo_list and plan my day, focusing on {focus}."


if __name__ == "__main__":
    mcp.run()
