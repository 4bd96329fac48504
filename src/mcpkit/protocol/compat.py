"""Serialize for the negotiated revision: drop what an older revision does not know.

The framework builds results in the newest stateful shape; this module removes or
rewrites the fields and content kinds an older peer's schema lacks (``title`` before
2025-06-18, ``audio`` before 2025-03-26, ``icons`` before 2025-11-25, …), driven by the
feature table in ``versions``. For the newest revision nothing is copied.
"""

from __future__ import annotations

from typing import Any

from .versions import Revision

JSON = dict[str, Any]


def _without(obj: JSON, keys: tuple[str, ...]) -> JSON:
    if not any(k in obj for k in keys):
        return obj
    return {k: v for k, v in obj.items() if k not in keys}


def _meta_keys(rev: Revision) -> tuple[str, ...]:
    drop: list[str] = []
    if not rev.has("title"):
        drop.append("title")
    if not rev.has("icons"):
        drop.append("icons")
    return tuple(drop)


def implementation(info: JSON, rev: Revision) -> JSON:
    """``Implementation`` (clientInfo/serverInfo) for ``rev``."""
    drop = list(_meta_keys(rev))
    if not rev.has("implementation_extras"):
        drop += ["description", "websiteUrl"]
    return _without(info, tuple(drop))


def server_capabilities(caps: JSON, rev: Revision) -> JSON:
    drop: list[str] = []
    if not rev.has("completions_capability"):
        drop.append("completions")
    if not rev.has("tool_execution"):
        drop.append("tasks")
    if not rev.has("extensions"):
        drop.append("extensions")
    return _without(caps, tuple(drop))


def content_block(block: JSON, rev: Revision) -> JSON:
    """A content block, or a text stand-in when ``rev`` lacks its kind."""
    kind = block.get("type")
    if kind == "audio" and not rev.has("audio_content"):
        return {
            "type": "text",
            "text": f"[audio content ({block.get('mimeType', 'unknown type')}) omitted: "
            f"protocol revision {rev.version} cannot carry audio]",
        }
    if kind == "resource_link" and not rev.has("resource_link"):
        name = block.get("name") or block.get("uri")
        return {"type": "text", "text": f"Resource link: {block.get('uri')} ({name})"}
    if not rev.has("title") and "_meta" in block:
        block = _without(block, ("_meta",))
    if kind == "resource" and isinstance(block.get("resource"), dict) and not rev.has("title"):
        block = {**block, "resource": _without(block["resource"], ("_meta",))}
    return block


def tool(t: JSON, rev: Revision) -> JSON:
    drop = list(_meta_keys(rev))
    if not rev.has("structured_content"):
        drop += ["outputSchema", "_meta"]
    if not rev.has("tool_annotations"):
        drop.append("annotations")
    if not rev.has("tool_execution"):
        drop.append("execution")
    return _without(t, tuple(drop))


def _listed(items: list[JSON], rev: Revision, extra: tuple[str, ...] = ()) -> list[JSON]:
    drop = _meta_keys(rev) + extra
    if not drop:
        return items
    return [_without(i, drop) for i in items]


def _prompt(p: JSON, rev: Revision) -> JSON:
    p = _without(p, _meta_keys(rev) + (() if rev.has("title") else ("_meta",)))
    args = p.get("arguments")
    if args and not rev.has("title"):
        p = {**p, "arguments": [_without(a, ("title",)) for a in args]}
    return p


def result(method: str, res: JSON, rev: Revision) -> JSON:
    """Adapt the result of ``method`` to ``rev``."""
    if method == "tools/call":
        content = res.get("content")
        if isinstance(content, list):
            res = {**res, "content": [content_block(b, rev) for b in content]}
        if not rev.has("structured_content"):
            res = _without(res, ("structuredContent",))
        return res
    if method == "tools/list":
        return {**res, "tools": [tool(t, rev) for t in res.get("tools", [])]}
    if method == "prompts/list":
        return {**res, "prompts": [_prompt(p, rev) for p in res.get("prompts", [])]}
    if method == "prompts/get":
        msgs = [
            {**m, "content": content_block(m["content"], rev)} for m in res.get("messages", [])
        ]
        return {**res, "messages": msgs}
    extra: tuple[str, ...] = () if rev.has("title") else ("_meta",)
    if method == "resources/list":
        return {**res, "resources": _listed(res.get("resources", []), rev, extra)}
    if method == "resources/templates/list":
        templates = _listed(res.get("resourceTemplates", []), rev, extra)
        return {**res, "resourceTemplates": templates}
    if method == "resources/read" and not rev.has("title"):
        return {**res, "contents": [_without(c, ("_meta",)) for c in res.get("contents", [])]}
    return res
