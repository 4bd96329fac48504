"""The to-do server of ``sdk_todo.py``, converted to mcpkit (docs/migration.md).

The changes, line for line: the imports, ``MCPServer(...)`` -> ``Server(...)``,
``@mcp.prompt()`` -> ``@server.prompt``, ``ResourceNotFoundError`` -> ``ResourceNotFound``
(with the URI as data), ``mcp.run()`` -> ``server.run()``. The handlers are unchanged.
``tests/test_migration.py`` runs both and checks they answer alike.

    python examples/migration/mcpkit_todo.py     # stdio
"""

from __future__ import annotations

from pydantic import BaseModel

from mcpkit import Context, ResourceNotFound, Server, ToolError

server = Server("todo", instructions="The user's to-do list. List before adding.")
TASKS: dict[int, str] = {}


class Task(BaseModel):
    id: int
    text: str


@server.tool(annotations={"readOnlyHint": False})
async def todo_add(text: str, ctx: Context) -> Task:
    """Add a task to the to-do list. Returns it with its id."""
    if not text.strip():
        raise ToolError("text is empty; say what the task is.")
    task = Task(id=len(TASKS) + 1, text=text.strip())
    TASKS[task.id] = task.text
    await ctx.info(f"added task {task.id}")
    return task


@server.tool(annotations={"readOnlyHint": True})
def todo_list() -> list[Task]:
    """Every task on the list, oldest first."""
    return [Task(id=i, text=t) for i, t in TASKS.items()]


@server.resource("todo://{task_id}", mime_type="text/plain")
def task(task_id: str) -> str:
    """One task's text."""
    if not task_id.isdigit() or int(task_id) not in TASKS:
        raise ResourceNotFound(f"no task todo://{task_id}", {"uri": f"todo://{task_id}"})
    return TASKS[int(task_id)]


@server.prompt
def plan_day(focus: str) -> str:
    """Ask the model to plan the day around the to-do list."""
    return f"Read my to-do list with todo_list and plan my day, focusing on {focus}."


if __name__ == "__main__":
    server.run()
