"""A notes server on SQLite: the kind of small, useful server mcpkit is for.

    mcpkit run examples/notes.py                 # stdio; the database is ./notes.db
    MCPKIT_NOTES_DB=/tmp/n.db mcpkit run examples/notes.py

Tools add, search, read and delete notes; every note is also a resource
(``notes://{note_id}``); a prompt asks the model to summarise the notes on a topic.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from mcpkit import ResourceNotFound, Server, ToolError


class Note(BaseModel):
    id: int = Field(description="The note's id; pass it to notes_get or notes_delete.")
    title: str
    body: str
    tags: list[str] = []
    created: str = Field(description="Creation time, ISO 8601 (UTC).")


class Deleted(BaseModel):
    deleted: int = Field(description="The id of the note that was deleted.")


class SearchResult(BaseModel):
    notes: list[Note]
    total: int = Field(description="How many notes matched in all (may exceed the limit).")


@asynccontextmanager
async def open_db(server: Server) -> AsyncIterator[sqlite3.Connection]:
    """Open the database once for the whole process."""
    db = sqlite3.connect(os.environ.get("MCPKIT_NOTES_DB", "notes.db"),
                         check_same_thread=False)
    db.row_factory = sqlite3.Row
    db.execute(
        "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, "
        "body TEXT NOT NULL, tags TEXT NOT NULL DEFAULT '', created TEXT NOT NULL)"
    )
    db.commit()
    try:
        yield db
    finally:
        db.close()


server = Server(
    "notes",
    "1.0.0",
    instructions=(
        "A personal notes store. Search before adding to avoid duplicates; cite note ids "
        "when you use a note's content."
    ),
    lifespan=open_db,
)


def _db() -> sqlite3.Connection:
    db = server.lifespan_state
    if db is None:
        raise RuntimeError("the database is not open")
    assert isinstance(db, sqlite3.Connection)
    return db


def _note(row: sqlite3.Row) -> Note:
    tags = [t for t in row["tags"].split(",") if t]
    return Note(id=row["id"], title=row["title"], body=row["body"], tags=tags,
                created=row["created"])


# scopes: what a token must grant to call the tool when the server is served with auth=
# (examples/protected_notes.py); no effect over stdio or unprotected HTTP.
@server.tool(annotations={"readOnlyHint": False, "destructiveHint": False},
             scopes=["notes:write"])
def notes_add(title: str, body: str, tags: list[str] | None = None) -> Note:
    """Save a new note. Use when the user asks to remember or write something down.
    Returns the saved note with its id and creation time.

    Args:
        title: A short title (at most 200 characters).
        body: The note's text.
        tags: Optional lowercase tags, e.g. ["shopping"].
    """
    if not title.strip() or len(title) > 200:
        raise ToolError("title must be 1-200 characters; shorten it and try again.")
    db = _db()
    created = datetime.now(UTC).isoformat(timespec="seconds")
    clean = sorted({t.strip().lower() for t in tags or [] if t.strip()})
    cur = db.execute("INSERT INTO notes (title, body, tags, created) VALUES (?, ?, ?, ?)",
                     (title.strip(), body, ",".join(clean), created))
    db.commit()
    server.notify_resource_updated(f"notes://{cur.lastrowid}")
    return Note(id=int(cur.lastrowid or 0), title=title.strip(), body=body, tags=clean,
                created=created)


@server.tool(annotations={"readOnlyHint": True})
def notes_search(query: str = "", tag: str | None = None, limit: int = 10) -> SearchResult:
    """Use this to find notes whose title or body contains the query (case-insensitive).
    Returns the matching notes, newest first, and how many matched in all.

    Args:
        query: Text to look for; empty matches every note.
        tag: Only notes with this tag.
        limit: At most this many notes (1-100).
    """
    if not 1 <= limit <= 100:
        raise ToolError("limit must be between 1 and 100.")
    where = "(title LIKE ? OR body LIKE ?)"
    params: list[object] = [f"%{query}%", f"%{query}%"]
    if tag:
        where += " AND (',' || tags || ',') LIKE ?"
        params.append(f"%,{tag.lower()},%")
    db = _db()
    total = db.execute(f"SELECT COUNT(*) FROM notes WHERE {where}", params).fetchone()[0]
    rows = db.execute(f"SELECT * FROM notes WHERE {where} ORDER BY id DESC LIMIT ?",
                      [*params, limit]).fetchall()
    return SearchResult(notes=[_note(r) for r in rows], total=total)


@server.tool(annotations={"readOnlyHint": True})
def notes_get(note_id: int) -> Note:
    """Use this to read one note in full when you know its id (ids come from notes_search
    or notes_add). Returns the note: title, body, tags and creation time."""
    row = _db().execute("SELECT * FROM notes WHERE id = ?", (note_id,)).fetchone()
    if row is None:
        raise ToolError(f"no note with id {note_id}; use notes_search to find ids.")
    return _note(row)


@server.tool(annotations={"readOnlyHint": False, "destructiveHint": True,
                          "idempotentHint": True}, scopes=["notes:write"])
def notes_delete(note_id: int) -> Deleted:
    """Delete a note for good. Use only when the user explicitly asks to delete it.
    Returns the id of the deleted note."""
    db = _db()
    cur = db.execute("DELETE FROM notes WHERE id = ?", (note_id,))
    db.commit()
    if cur.rowcount == 0:
        raise ToolError(f"no note with id {note_id}; nothing was deleted. Use notes_search "
                        "to find the id.")
    return Deleted(deleted=note_id)


@server.resource("notes://{note_id}", mime_type="text/markdown", name="note")
def note_resource(note_id: str) -> str:
    """One note as Markdown."""
    if not note_id.isdigit():
        raise ResourceNotFound(f"Resource not found: notes://{note_id}",
                               {"uri": f"notes://{note_id}"})
    row = _db().execute("SELECT * FROM notes WHERE id = ?", (int(note_id),)).fetchone()
    if row is None:
        raise ResourceNotFound(f"Resource not found: notes://{note_id}",
                               {"uri": f"notes://{note_id}"})
    note = _note(row)
    return f"# {note.title}\n\n{note.body}\n\nTags: {', '.join(note.tags) or '-'}\n"


@server.prompt
def summarize_notes(topic: str) -> str:
    """Ask the model to summarise the notes about a topic.

    Args:
        topic: What the summary should be about.
    """
    return (f"Use notes_search to find my notes about {topic!r}, then summarise them in a "
            "few bullet points, citing note ids.")


if __name__ == "__main__":
    server.run()
