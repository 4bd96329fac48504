"""JSON Pointer (RFC 6901) inside one document: what a local ``$ref`` (``#/$defs/X``) names.

Used by the server's argument errors and the checker's parameter lint, which both follow
the local ``$ref`` of a tool's ``inputSchema``.
"""

from __future__ import annotations

from typing import Any

MISSING: Any = object()
"""The default :func:`resolve` answers when the pointer names nothing in the document."""


def resolve(root: Any, pointer: str, default: Any = None) -> Any:
    """The value at ``pointer`` (``""`` the whole document, ``/a/0/b~1c`` a member) in
    ``root``; ``default`` when it is not a pointer or leads nowhere."""
    if pointer == "":
        return root
    if not pointer.startswith("/"):
        return default
    node = root
    for raw in pointer[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return default
    return node
