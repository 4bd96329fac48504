"""A stdio server whose tools ask the person at the CLI things ``everything.py`` does not:
a URL to open (URL mode), a form with every string format, bounds and a multiple choice,
and a question whose server text carries terminal escapes (``tests/test_cli_elicit.py``).

Each tool answers with the elicitation's outcome as JSON, so a test sees exactly what the
CLI sent back.
"""

from __future__ import annotations

import json

from mcpkit import Context, Server

server = Server("cli-questions")

PROFILE = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email", "title": "Email"},
        "born": {"type": "string", "format": "date"},
        "meeting": {"type": "string", "format": "date-time"},
        "site": {"type": "string", "format": "uri"},
        "nick": {"type": "string", "minLength": 2, "maxLength": 8},
        "height": {"type": "number", "minimum": 0.5, "maximum": 2.5},
        "pets": {"type": "integer", "minimum": 0, "default": 0},
        "langs": {"type": "array", "minItems": 1, "maxItems": 2,
                  "items": {"anyOf": [{"const": "py", "title": "Python"},
                                      {"const": "rs", "title": "Rust"},
                                      {"const": "go", "title": "Go"}]}},
    },
    "required": ["email", "born", "nick", "height", "langs"],
}


@server.tool
async def open_link(ctx: Context) -> str:
    """Sends the user to a sign-in page (URL-mode elicitation)."""
    answer = await ctx.elicit_url("Sign in to continue", "https://auth.example.com/start?s=1",
                                  "signin-1", key="signin")
    return json.dumps({"action": answer.action})


@server.tool
async def profile(ctx: Context) -> str:
    """Asks for a profile: every string format, bounds and a multiple choice."""
    answer = await ctx.elicit("Your profile, please", PROFILE, key="profile")
    return json.dumps({"action": answer.action, "content": answer.content})


@server.tool
async def hostile(ctx: Context) -> str:
    """Asks with terminal escapes in its message and a field title."""
    schema = {"type": "object", "properties": {
        "ok": {"type": "boolean", "title": "OK\x1b]0;owned\x07?"}}, "required": ["ok"]}
    answer = await ctx.elicit("\x1b[2J\x1b[Hcleared\u202eevil", schema, key="hostile")
    return json.dumps({"action": answer.action, "content": answer.content})


if __name__ == "__main__":
    server.run()
