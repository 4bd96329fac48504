"""A server whose definitions look suspicious to a naive scanner but are benign.

The security lint (``SEC.*``) must pass it: every text here resembles an attack pattern
(a key path, "ignore previous", "IMPORTANT", a quoted key format, "message history",
Cyrillic and Greek letters, a ``path`` and a ``command`` parameter) without being one.
Precision matters more than recall: a scanner that cries wolf on honest servers is ignored.

Run: ``python tests/servers/check_benign.py`` (stdio).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from mcpkit import Server

server = Server(
    "benign", "1.0.0",
    instructions=(
        "IMPORTANT: all times are UTC. Do not show the user raw ids; show titles instead. "
        "Ignore previous results when the user asks to refresh. Ответы на русском языке "
        "допустимы."),
)


@server.tool(annotations={"readOnlyHint": True})
def keys_public(
    name: Annotated[Literal["id_ed25519", "id_rsa"], Field(
        description="Which key pair's public half to show.")],
) -> str:
    """Use this to show the user's public SSH key. Returns the text of ~/.ssh/id_ed25519.pub
    or ~/.ssh/id_rsa.pub. It never reads ~/.ssh/id_rsa itself, and never sends any file."""
    return f"ssh-ed25519 AAAA... {name}"


@server.tool(annotations={"readOnlyHint": False})
def chat_post(
    channel: Annotated[str, Field(pattern=r"^#[a-z0-9-]{1,40}$",
                                  description="The channel, e.g. '#general'.")],
    text: Annotated[str, Field(max_length=4000, description="The message to post.")],
) -> str:
    """Use this to post a message to a channel; returns the channel's message history
    (the last 20 messages). Summarise the conversation yourself before posting if asked."""
    return "posted"


@server.tool(annotations={"readOnlyHint": True})
def files_read(
    path: Annotated[str, Field(pattern=r"^docs/[\w-]+\.md$",
                               description="A Markdown file under docs/.")],
    json_path: Annotated[str, Field(description="A JSONPath into front matter, e.g. $.title."
                                    )] = "$",
) -> str:
    """Use this to read one Markdown document of the project's docs/ folder. Returns its text.
    Keys look like AKIAIOSFODNN7EXAMPLE or sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx in the
    examples; PEM files start with -----BEGIN PUBLIC KEY-----."""
    return f"# {path}"


@server.tool(annotations={"readOnlyHint": True})
def ops_run(
    command: Annotated[Literal["status", "uptime", "version"], Field(
        description="Which fixed diagnostic to run.")],
) -> str:
    """Use this to run one of three fixed diagnostics. Returns its output; the latency is in
    μs (Δ from the previous run) and π is shown to 5 digits. Café-style <b>bold</b> text and
    <code>code</code> spans are kept."""
    return command


@server.prompt()
def review(topic: str) -> str:
    """Review a document; do not mention internal ids to the user, and ignore earlier drafts."""
    return f"Review {topic}; forget previous drafts."


if __name__ == "__main__":
    server.run()
