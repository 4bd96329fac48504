"""Resources: static URIs and RFC 6570 templates, matched safely.

A template variable (``{name}``) matches one URI segment: no ``/``, ``?`` or ``#``. The
matched text is percent-decoded once, and a value that then holds ``/``, ``\\``, a NUL or
is ``.``/``..`` is refused, so ``file:///{path}``-style templates cannot be walked out of
with ``..`` or ``%2e%2e%2f``. ``{+name}`` (reserved expansion) may span ``/`` but is
still refused when any of its segments is ``..`` or ``.``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from typing import Any

from ..protocol.errors import InvalidParams
from ..protocol.scopes import check_scopes
from . import declared
from .content import resource_contents, to_json_text
from .context import Context
from .declared import ObjectLike
from .handler import HandlerSpec
from .schema import parse_docstring
from .visibility import check_tags

JSON = dict[str, Any]
URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_VAR = re.compile(r"\{(\+?)([A-Za-z_][A-Za-z0-9_]*)\}")


def _unquote(text: str) -> str:
    """Percent-decode strictly (urllib.parse is loaded on the first escaped URI)."""
    from urllib.parse import unquote

    return unquote(text, errors="strict")


class UnsafeURI(InvalidParams):
    """A URI whose template variables decode to a path traversal."""


def check_uri(uri: Any) -> str:
    """The URI if it is an RFC 3986 absolute URI of sane size, else ``InvalidParams``."""
    if not isinstance(uri, str) or not uri:
        raise InvalidParams("Invalid params: 'uri' (a non-empty string) is required.")
    if len(uri) > 8192:
        raise InvalidParams(
            f"Invalid params: 'uri' is too long ({len(uri)} characters; the limit is 8192).",
            {"uri": uri[:200]},
        )
    if not URI_SCHEME.match(uri) or any(ord(c) < 0x21 for c in uri):
        raise InvalidParams(
            "Invalid params: 'uri' must be an absolute URI (scheme:...) without spaces or "
            "control characters.",
            {"uri": uri[:200]},
        )
    return uri


class _Readable:
    fn: Callable[..., Any]
    spec: HandlerSpec
    mime_type: str | None
    scopes: tuple[str, ...]
    """The OAuth scopes a read needs over a protected HTTP endpoint (``ValueError`` at
    construction for a name that is not a scope-token)."""

    def _setup(self, fn: Callable[..., Any], scopes: Iterable[str], name: str | None,
               title: str | None, description: str | None, mime_type: str | None,
               annotations: ObjectLike | None, icons: list[ObjectLike] | None,
               cache_ttl_ms: int | None, cache_scope: str | None) -> None:
        """What a resource and a template declare alike: the function, its metadata
        (name and description default to the function's), the 2026-07-28 caching hints
        for its reads (None: the server's defaults) and the scopes a read needs."""
        self.fn = fn
        self.spec = HandlerSpec(fn)
        self.scopes = check_scopes(scopes)
        self.name = name or self.spec.name
        self.title = title
        self.description = description if description is not None else parse_docstring(
            inspect.getdoc(fn))[0]
        self.mime_type = mime_type
        self.annotations = declared.annotations_object(annotations, tool=False)
        self.icons = declared.icons(icons)
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope

    async def _call(self, kwargs: JSON, ctx: Context) -> Any:
        return await self.spec.invoke(kwargs, ctx)

    def contents(self, uri: str, value: Any) -> list[JSON]:
        if isinstance(value, list) and all(isinstance(v, dict) and "uri" in v for v in value):
            return value
        if isinstance(value, str | bytes | bytearray):
            mime = self.mime_type or ("text/plain" if isinstance(value, str) else
                                      "application/octet-stream")
            return [resource_contents(uri, bytes(value) if isinstance(value, bytearray) else value,
                                      mime)]
        return [resource_contents(uri, to_json_text(value), self.mime_type or "application/json")]


def _meta_fields(obj: Any, d: JSON) -> JSON:
    if obj.title:
        d["title"] = obj.title
    if obj.description:
        d["description"] = obj.description
    if obj.mime_type:
        d["mimeType"] = obj.mime_type
    if obj.annotations:
        d["annotations"] = obj.annotations
    if obj.icons:
        d["icons"] = obj.icons
    return d


class Resource(_Readable):
    """A resource at a fixed URI, read by calling ``fn()`` (or a fixed value)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        annotations: ObjectLike | None = None,
        icons: list[ObjectLike] | None = None,
        cache_ttl_ms: int | None = None,
        cache_scope: str | None = None,
        scopes: Iterable[str] = (),
        tags: Iterable[str] = (),
    ) -> None:
        self.uri = check_uri(uri)
        self.size = size
        self.tags = check_tags(tags)
        self._setup(fn, scopes, name, title, description, mime_type, annotations, icons,
                    cache_ttl_ms, cache_scope)

    def definition(self) -> JSON:
        d = _meta_fields(self, {"uri": self.uri, "name": self.name})
        if self.size is not None:
            d["size"] = self.size
        return d

    async def read(self, ctx: Context) -> list[JSON]:
        return self.contents(self.uri, await self._call({}, ctx))


class ResourceTemplate(_Readable):
    """Resources whose URIs match an RFC 6570 template; ``fn`` receives the variables."""

    def __init__(
        self,
        fn: Callable[..., Any],
        uri_template: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: ObjectLike | None = None,
        icons: list[ObjectLike] | None = None,
        cache_ttl_ms: int | None = None,
        cache_scope: str | None = None,
        scopes: Iterable[str] = (),
        tags: Iterable[str] = (),
    ) -> None:
        self.uri_template = uri_template
        self.tags = check_tags(tags)
        self._setup(fn, scopes, name, title, description, mime_type, annotations, icons,
                    cache_ttl_ms, cache_scope)
        self.variables: list[tuple[str, bool]] = []
        pattern = ["^"]
        pos = 0
        for m in _VAR.finditer(uri_template):
            pattern.append(re.escape(uri_template[pos:m.start()]))
            reserved, var = m.group(1) == "+", m.group(2)
            self.variables.append((var, reserved))
            pattern.append(f"(?P<{var}>[^?#]+?)" if reserved else f"(?P<{var}>[^/?#]+)")
            pos = m.end()
        pattern.append(re.escape(uri_template[pos:]) + "$")
        self.regex = re.compile("".join(pattern))
        params = {param.name for param, _ in self.spec.parameters}
        missing = {v for v, _ in self.variables} - params
        if missing and not self.spec.any_keyword:  # fn(**values) takes them all
            raise ValueError(
                f"resource template {uri_template!r}: function {self.name!r} lacks parameters "
                f"{sorted(missing)}"
            )

    def definition(self) -> JSON:
        return _meta_fields(self, {"uriTemplate": self.uri_template, "name": self.name})

    def match(self, uri: str) -> dict[str, str] | None:
        """The template variables for ``uri``; None if it does not match; ``UnsafeURI`` if it
        matches only through a traversal or encoded separator."""
        m = self.regex.match(uri)
        if m is None:
            return None
        values: dict[str, str] = {}
        for var, reserved in self.variables:
            raw = m.group(var)
            try:
                value = _unquote(raw) if "%" in raw else raw
            except UnicodeDecodeError:
                value = "\x00"  # undecodable percent-escapes: refused below
            segments = value.split("/") if reserved else [value]
            bad = "\x00" in value or "\\" in value or any(s in (".", "..") for s in segments)
            if not reserved and "/" in value:
                bad = True
            if bad or not value:
                raise UnsafeURI(
                    f"Invalid params: the URI's '{var}' part decodes to {value[:80]!r}, which "
                    "is not allowed (no '..', '.', '/', '\\' or NUL inside a template variable).",
                    {"uri": uri[:200]},
                )
            values[var] = value
        return values

    async def read(self, uri: str, values: dict[str, str], ctx: Context) -> list[JSON]:
        return self.contents(uri, await self._call(dict(values), ctx))
