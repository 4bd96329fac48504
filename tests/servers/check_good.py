"""A small, well-designed notes server that ``mcpkit check`` must pass without a failure.

It is the baseline of the checker's family tests: ``check_family.py`` and
``check_family_http.py`` run it behind a relay that breaks exactly one rule, so every rule
the checker judges must pass here first. The design follows the server design guide:
service-prefixed tool names, descriptions that say when to use a tool and what it returns,
flat parameters with ``additionalProperties: false``, enums for finite sets, one shared
description per shared parameter, ``outputSchema`` and annotations on every tool,
instructions, and actionable error messages. Data lives in memory and is seeded the same
way on every start, so answers are deterministic.

Run: ``python tests/servers/check_good.py`` (stdio) or ``--http --port N`` (Streamable
HTTP at ``http://127.0.0.1:N/mcp``).
"""

from __future__ import annotations

import sys
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from mcpkit import ResourceNotFound, Server, ToolError

NoteId = Annotated[int, Field(ge=1, description="The note's id, as returned by notes_search.")]
Color = Literal["red", "green", "blue"]


class Note(BaseModel):
    id: int = Field(description="The note's id.")
    title: str = Field(description="The note's title.")
    body: str = Field(description="The note's text.")
    tag: str = Field(description="The note's tag.")
    color: Color = Field(description="The note's label colour.")


class SearchResult(BaseModel):
    notes: list[Note] = Field(description="The matching notes, lowest id first.")
    total: int = Field(description="How many notes matched in all (may exceed the limit).")


class Deleted(BaseModel):
    id: int = Field(description="The id of the note that was deleted.")
    remaining: int = Field(description="How many notes are left.")


class TagCount(BaseModel):
    tag: str = Field(description="A tag in use.")
    notes: int = Field(description="How many notes carry it.")


class TagList(BaseModel):
    tags: list[TagCount] = Field(description="Every tag in use, alphabetically.")


SEED = [
    Note(id=1, title="Groceries", body="Milk, eggs, bread.", tag="home", color="green"),
    Note(id=2, title="Standup", body="Demo the checker at ten.", tag="work", color="blue"),
    Note(id=3, title="Dentist", body="Tuesday 9:30.", tag="home", color="red"),
]
NOTES: dict[int, Note] = {n.id: n.model_copy() for n in SEED}

server = Server(
    "notes",
    "1.0.0",
    title="Notes",
    instructions=(
        "A small notes store. Use notes_search to find notes and their ids before reading, "
        "updating or deleting one; use notes_add to save something the user wants "
        "remembered. Delete only when the user explicitly asks."
    ),
)


def _note(note_id: int) -> Note:
    note = NOTES.get(note_id)
    if note is None:
        known = ", ".join(str(i) for i in sorted(NOTES)) or "none"
        raise ToolError(f"No note has id {note_id}. Known ids: {known}. Call notes_search to "
                        "find the id of the note you mean, then try again.")
    return note


@server.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
def notes_search(
    query: Annotated[str, Field(max_length=200, description=(
        "Text to look for in titles and bodies, case-insensitive; empty matches every note."
    ))] = "",
    limit: Annotated[int, Field(ge=1, le=50, description="At most this many notes (1-50).")]
    = 10,
) -> SearchResult:
    """Use this to find notes by text or tag, or to look up a note's id. Returns the
    matching notes (id, title, body, tag, colour), lowest id first, and the total count."""
    words = query.lower()
    found = [n for _, n in sorted(NOTES.items())
             if not words or words == n.tag or words in f"{n.title}\n{n.body}".lower()]
    return SearchResult(notes=found[:limit], total=len(found))


@server.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
def notes_get(note_id: NoteId) -> Note:
    """Use this to read one note in full when you know its id. Returns the note's id,
    title, body, tag and colour."""
    return _note(note_id)


@server.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
def notes_list_tags() -> TagList:
    """Use this to see which tags are in use before searching or adding by tag. Returns
    every tag with the number of notes that carry it, alphabetically."""
    counts: dict[str, int] = {}
    for note in NOTES.values():
        counts[note.tag] = counts.get(note.tag, 0) + 1
    return TagList(tags=[TagCount(tag=t, notes=c) for t, c in sorted(counts.items())])


@server.tool(annotations={"readOnlyHint": False, "destructiveHint": False,
                          "idempotentHint": False, "openWorldHint": False})
def notes_add(
    title: Annotated[str, Field(min_length=1, max_length=200,
                                description="A short title, 1-200 characters.")],
    body: Annotated[str, Field(max_length=5000, description="The note's text.")],
    tag: Annotated[str, Field(min_length=1, max_length=40,
                              description="A lowercase tag name, e.g. work or home.")],
    color: Annotated[Color, Field(description="The note's label colour.")],
) -> Note:
    """Use this to save a new note when the user asks to remember or write something
    down. Returns the saved note with its new id."""
    note = Note(id=max(NOTES, default=0) + 1, title=title, body=body, tag=tag, color=color)
    NOTES[note.id] = note
    return note


@server.tool(annotations={"readOnlyHint": False, "destructiveHint": False,
                          "idempotentHint": True, "openWorldHint": False})
def notes_recolor(
    note_id: NoteId,
    color: Annotated[Color, Field(description="The note's label colour.")],
) -> Note:
    """Use this to change the label colour of an existing note. Returns the updated
    note."""
    note = _note(note_id).model_copy(update={"color": color})
    NOTES[note_id] = note
    return note


@server.tool(annotations={"readOnlyHint": False, "destructiveHint": True,
                          "idempotentHint": True, "openWorldHint": False})
def notes_delete(note_id: NoteId) -> Deleted:
    """Use this to delete a note for good, only when the user explicitly asks. Returns
    the deleted id and how many notes remain."""
    _note(note_id)
    del NOTES[note_id]
    return Deleted(id=note_id, remaining=len(NOTES))


@server.resource("notes://index", name="index", title="All notes",
                 description="Every note's id and title, one per line.",
                 mime_type="text/plain")
def notes_index() -> str:
    return "".join(f"{n.id}: {n.title}\n" for _, n in sorted(NOTES.items()))


@server.resource("notes://{note_id}", name="note", title="One note",
                 description="One note as Markdown.", mime_type="text/markdown")
def note_resource(note_id: str) -> str:
    note = NOTES.get(int(note_id)) if note_id.isdigit() else None
    if note is None:
        raise ResourceNotFound(f"Resource not found: notes://{note_id}. Read notes://index "
                               "for the ids that exist.", {"uri": f"notes://{note_id}"})
    return f"# {note.title}\n\n{note.body}\n\nTag: {note.tag}\n"


@server.completion(resource_template="notes://{note_id}", argument="note_id")
def complete_note_id(value: str, context: dict[str, str]) -> list[str]:
    return [str(i) for i in sorted(NOTES) if str(i).startswith(value)]


@server.prompt(title="Summarise notes")
def summarize_notes(topic: str) -> str:
    """Ask the model to summarise the notes about a topic.

    Args:
        topic: What the summary should be about (a tag or a few words).
    """
    return (f"Use notes_search to find my notes about {topic!r}, then summarise them in a "
            "few bullet points, citing note ids.")


@server.completion(prompt="summarize_notes", argument="topic")
def complete_topic(value: str, context: dict[str, str]) -> list[str]:
    return sorted({n.tag for n in NOTES.values() if n.tag.startswith(value)})


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("http", port=int(sys.argv[sys.argv.index("--port") + 1]))
    else:
        server.run()
