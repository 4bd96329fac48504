"""The routing headers of a stateless (2026-07-28) request over Streamable HTTP.

Such a request carries no session: ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``
(a tool's or prompt's name, a resource's URI) and one ``Mcp-Param-*`` header for each
argument a tool declared with ``x-mcp-header`` repeat what the body says, so that
proxies and load balancers can route it without reading the body. The server refuses a
request whose headers disagree with its body (-32020). Header values that are not plain
visible ASCII travel base64-encoded (R26-07.HTTP.13).

Everything here is derived from the message's method and params as the connection
queued them (``Outgoing``); nothing reads the encoded body back.
"""

from __future__ import annotations

import base64
from typing import Any

from ..protocol.jsonrpc import JSONObject
from ..protocol.stateless import PROTOCOL_VERSION

NAMED_BY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
            "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}
"""The parameter that ``Mcp-Name`` repeats, per method (the task methods of the
io.modelcontextprotocol/tasks extension: ``taskId``, SEP-2663 "Routing Headers")."""


def header_value(value: str) -> str:
    """A header-safe value (R26-07.HTTP.13): as is when printable ASCII without leading or
    trailing space, else ``=?base64?…?=`` — as is a value that itself looks like that form."""
    if (all(0x20 <= ord(c) <= 0x7E for c in value) and value.strip() == value
            and not (value.startswith("=?base64?") and value.endswith("?="))):
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


def param_header_value(value: Any) -> str | None:
    """An argument as an ``Mcp-Param-*`` header value (None: not a primitive)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return header_value(value)
    return None


def stateless_version(params: JSONObject | None) -> str | None:
    """The revision a stateless request names in ``params._meta``; None for a request of
    a session (which has no such metadata)."""
    meta = params.get("_meta") if params is not None else None
    version = meta.get(PROTOCOL_VERSION) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def routing_headers(method: str, params: JSONObject | None,
                    declared: dict[str, dict[str, str]]) -> dict[str, str] | None:
    """The routing headers of a stateless request, or None if it belongs to a session.

    ``declared`` maps a tool's name to its ``{parameter: x-mcp-header name}`` (from
    ``tools/list``); an argument that is not a primitive gets no header (the server then
    judges it by the tool's schema)."""
    version = stateless_version(params)
    if version is None:
        return None
    assert params is not None
    headers = {"mcp-protocol-version": version, "mcp-method": method}
    key = NAMED_BY.get(method)
    name = params.get(key) if key else None
    if isinstance(name, str):
        headers["mcp-name"] = header_value(name)
        wanted = declared.get(name) if method == "tools/call" else None
        arguments = params.get("arguments")
        if wanted and isinstance(arguments, dict):
            for param, header in wanted.items():
                value = param_header_value(arguments.get(param))
                if value is not None:
                    headers[f"mcp-param-{header.lower()}"] = value
    return headers
