"""The registries: the tools, resources, resource templates, prompts and completions a
server offers, and the paged listings of them.

Each kind is a dict keyed by what a client names it with. Adding or removing one announces
the change through the ``announce`` callback (``notifications/<kind>/list_changed`` to
whoever listens). Listings are paged at ``page_size`` with opaque cursors
(``base64("mcpkit:<offset>")``; anything else is ``InvalidParams``). The pages of
``tools/list`` for the newest stateful revision are kept serialized until the tools
change, so a large catalogue is not re-encoded on every call.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, TypeVar

import orjson

from ..protocol.errors import InvalidParams
from ..protocol.jsonrpc import compact
from ..protocol.tasks import EXTENSION, core_capability
from .handler import HandlerSpec
from .prompts import Prompt
from .resources import Resource, ResourceTemplate
from .tools import Tool
from .visibility import LIST_KIND, Visibility, shows

JSON = dict[str, Any]
F = TypeVar("F", bound=Callable[..., Any])
N = TypeVar("N", Tool, Prompt)
Completer = Callable[..., Any]
"""``fn(value, context_arguments)``: candidate strings for an argument, sync or async; a
parameter annotated ``Context`` gets the request's context (``ctx.auth``, ...)."""
Layers = tuple[Visibility | None, Visibility | None] | None
"""The visibility rules a request is seen through: (the server's, its session's), or None
when neither has any (the fast path: nothing is filtered)."""
CompletionKey = tuple[str, str, str]
"""(``ref/prompt`` or ``ref/resource``, the prompt's name or the template, the argument)."""

MAX_CACHED_PAGES = 1024
"""Serialized ``tools/list`` pages kept at most (one per cursor asked for)."""
MAX_PAGE_BYTES = 1024 * 1024
"""A ``tools/list`` page ends before its tools pass this many bytes of JSON, whatever
``page_size`` says: tools with large schemas (a server built from a big OpenAPI document
holds megabytes of them) would otherwise make one answer larger than a client takes
(mcpkit's client: 4 MiB a message)."""


class Registry:
    """What a server offers, by kind; ``announce(method)`` sends a list_changed."""

    def __init__(self, *, page_size: int, announce: Callable[[str], None]) -> None:
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: dict[str, ResourceTemplate] = {}
        self.prompts: dict[str, Prompt] = {}
        #: key -> (the completer, the name of its ``Context`` parameter or None)
        self.completers: dict[CompletionKey, tuple[Completer, str | None]] = {}
        self._page_size = page_size
        self._announce = announce
        self._tool_pages: dict[str | None, JSON] = {}  # cursor -> serialized tools/list page
        # ((had completers, had task tools), capabilities)
        self._caps: tuple[tuple[bool, bool], JSON] | None = None
        self._tasky: bool | None = None  # does any tool run as a task (None: not known)
        self._scoped: bool | None = None  # does anything declare scopes (None: not known)
        #: Called with the kind after every change ("tools", "prompts", "resources", or
        #: "completions"); a server mounting this one keeps its copies in step (mount.py).
        self.followers: list[Callable[[str], None]] = []
        #: Called with (table, key) before a tool, prompt, resource or template is added
        #: ("tools", "prompts", "resources", "templates"); raising refuses it (a server
        #: mounting this one refuses what would collide with its own names).
        self.claims: list[Callable[[str, str], None]] = []
        #: The server's visibility rules (``visibility.py``); None while there are none.
        self.visibility: Visibility | None = None

    @property
    def page_size(self) -> int:
        """Items per listing page; changing it drops the serialized pages."""
        return self._page_size

    @page_size.setter
    def page_size(self, size: int) -> None:
        self._page_size = size
        self._tool_pages.clear()

    def changed(self, kind: str) -> None:
        """Drop what was derived from the ``"tools"``, ``"prompts"`` or ``"resources"``
        list and announce that it changed."""
        if kind not in ("tools", "prompts", "resources"):
            raise ValueError("kind must be 'tools', 'prompts' or 'resources'")
        if kind == "tools":
            self._tool_pages.clear()
            self._tasky = None
        self._scoped = None
        self._announce(f"notifications/{kind}/list_changed")
        for follow in self.followers:
            follow(kind)

    def claim(self, table: str, key: str) -> None:
        """Ask every ``claims`` hook whether ``key`` may be added to ``table``."""
        for check in self.claims:
            check(table, key)

    @property
    def scoped(self) -> bool:
        """Whether any tool, resource, template or prompt declares OAuth scopes (the
        per-call scope check is skipped when none does)."""
        if self._scoped is None:
            self._scoped = any(item.scopes for table in (
                self.tools, self.resources, self.templates, self.prompts)
                for item in table.values())
        return self._scoped

    @property
    def tasky(self) -> bool:
        """Whether any tool may run as a task (then the server declares tasks)."""
        if self._tasky is None:
            self._tasky = any(t.task is not None for t in self.tools.values())
        return self._tasky

    # ------------------------------------------------------------------ adding, removing

    def add_tool(self, fn: Callable[..., Any] | Tool, **options: Any) -> Tool:
        """Register a tool (see ``Server.add_tool``); a second one of a name is refused."""
        return self._add_named("tools", self.tools,
                               fn if isinstance(fn, Tool) else Tool(fn, **options))

    def remove_tool(self, name: str) -> None:
        del self.tools[name]
        self.changed("tools")

    def add_resource(
        self, fn: Callable[..., Any] | str | bytes, uri: str, **options: Any
    ) -> Resource | ResourceTemplate:
        """Register a resource, or a template when ``uri`` has ``{variables}`` (see
        ``Server.add_resource``)."""
        if isinstance(fn, str | bytes):
            value = fn
            options.setdefault("name", uri)

            async def fixed() -> str | bytes:  # async: answered without a thread hop
                return value

            fn = fixed
        if "{" in uri:
            options.pop("size", None)
            obj: Resource | ResourceTemplate = ResourceTemplate(fn, uri, **options)
        else:
            obj = Resource(fn, uri, **options)
        self.add_readable(obj)
        return obj

    def add_readable(self, obj: Resource | ResourceTemplate) -> None:
        """Register a ready ``Resource`` or ``ResourceTemplate`` (replacing one at its URI)."""
        if isinstance(obj, ResourceTemplate):
            self.claim("templates", obj.uri_template)
            self.templates[obj.uri_template] = obj
        else:
            self.claim("resources", obj.uri)
            self.resources[obj.uri] = obj
        self.changed("resources")

    def remove_resource(self, uri: str) -> None:
        """Remove the template written ``uri``, else the resource at ``uri``."""
        if uri in self.templates:
            del self.templates[uri]
        else:
            del self.resources[uri]
        self.changed("resources")

    def add_prompt(self, fn: Callable[..., Any] | Prompt, **options: Any) -> Prompt:
        """Register a prompt; a second one of a name is refused."""
        return self._add_named("prompts", self.prompts,
                               fn if isinstance(fn, Prompt) else Prompt(fn, **options))

    def remove_prompt(self, name: str) -> None:
        del self.prompts[name]
        self.changed("prompts")

    def _add_named(self, kind: str, table: dict[str, N], item: N) -> N:
        """Add ``item`` to ``table`` under its name, refusing a second one of that name."""
        if item.name in table:
            raise ValueError(f"a {kind[:-1]} named {item.name!r} is already registered")
        self.claim(kind, item.name)
        table[item.name] = item
        self.changed(kind)
        return item

    def add_completion(self, argument: str, fn: Completer, prompt: str | None,
                       resource_template: str | None) -> None:
        """Complete ``argument`` of exactly one of a prompt or a resource template."""
        if (prompt is None) == (resource_template is None):
            raise ValueError("give exactly one of prompt= or resource_template=")
        key = ("ref/prompt", prompt, argument) if prompt else (
            "ref/resource", str(resource_template), argument)
        self.completers[key] = (fn, HandlerSpec(fn).context_param)
        for follow in self.followers:
            follow("completions")

    # ------------------------------------------------------------------ lookups

    def capabilities(self) -> JSON:
        """The server capabilities these registries declare (one dict, shared while
        whether there are completions stays the same)."""
        key = (bool(self.completers), self.tasky)
        cached = self._caps
        if cached is not None and cached[0] == key:
            return cached[1]
        completions, tasky = key
        caps: JSON = {"logging": {}}
        if completions:
            caps["completions"] = {}
        caps["prompts"] = {"listChanged": True}
        caps["resources"] = {"subscribe": True, "listChanged": True}
        caps["tools"] = {"listChanged": True}
        if tasky:  # 2025-11-25 in-core tasks and the 2026-07-28 extension (compat keeps one)
            caps["tasks"] = core_capability()
            caps["extensions"] = {EXTENSION: {}}
        self._caps = (key, caps)
        return caps

    def param_headers(self, name: str) -> dict[str, str]:
        """``{parameter: header}`` of tool ``name``'s ``x-mcp-header`` annotations (the
        2026-07-28 ``Mcp-Param-*`` headers the HTTP layer checks against the arguments);
        worked out on first use and kept on the tool."""
        tool = self.tools.get(name)
        if tool is None:
            return {}
        if tool.param_headers is None:
            props = tool.input_schema.get("properties") or {}
            tool.param_headers = {
                p: sub["x-mcp-header"] for p, sub in props.items()
                if isinstance(sub, dict) and isinstance(sub.get("x-mcp-header"), str)
            }
        return tool.param_headers

    # ------------------------------------------------------------------ visibility

    def tables(self) -> tuple[tuple[str, dict[str, Any]], ...]:
        """Each component kind (``visibility.KINDS``) with its table."""
        return (("tool", self.tools), ("resource", self.resources),
                ("template", self.templates), ("prompt", self.prompts))

    def layers(self, session_rules: Visibility | None) -> Layers:
        """The rules a session's requests are seen through (None: no rule anywhere)."""
        own = self.visibility
        return None if own is None and session_rules is None else (own, session_rules)

    def visible(self, kind: str, table: dict[str, Any], layers: Layers) -> list[Any]:
        """The components of ``table`` (of ``kind``) that ``layers`` show, in order."""
        if layers is None:
            return list(table.values())
        return [item for item in table.values() if shows(layers, kind, item)]

    def find(self, kind: str, table: dict[str, Any], key: Any, layers: Layers) -> Any:
        """``table[key]`` if it is there and ``layers`` show it, else None."""
        item = table.get(key) if isinstance(key, str) else None
        if item is None or layers is None or shows(layers, kind, item):
            return item
        return None

    def seen(self, layers: Layers) -> dict[str, set[int]]:
        """What ``layers`` show, by listing (``tools``, ``resources``, ``prompts``), as
        object ids: compared before and after a change of the rules."""
        out: dict[str, set[int]] = {"tools": set(), "resources": set(), "prompts": set()}
        for kind, table in self.tables():
            out[LIST_KIND[kind]].update(map(id, self.visible(kind, table, layers)))
        return out

    def revised(self, before: dict[str, set[int]]) -> None:
        """The server's rules changed: announce each listing whose visible set did."""
        after = self.seen(self.layers(None))
        for kind in ("tools", "resources", "prompts"):
            if before[kind] != after[kind]:
                self.changed(kind)

    # ------------------------------------------------------------------ listing

    def page(self, params: JSON, items: list[JSON], key: str,
             sizes: list[int] | None = None) -> JSON:
        """The page of ``items`` at ``params["cursor"]`` as ``{key: [...]}``, with
        ``nextCursor`` when more follow; given each item's encoded ``sizes``, a page also
        ends before it would pass ``MAX_PAGE_BYTES`` (one item at least)."""
        cursor = params.get("cursor")
        start = 0
        if cursor is not None:
            start = _decode_cursor(cursor)
            if start > len(items):
                raise _bad_cursor()
        end = min(start + self._page_size, len(items))
        if sizes is not None:
            total = 0
            for i in range(start, end):
                total += sizes[i]
                if total > MAX_PAGE_BYTES and i > start:
                    end = i
                    break
        result: JSON = {key: items[start:end]}
        if end < len(items):
            result["nextCursor"] = _encode_cursor(end)
        return result

    def tools_page(self, params: JSON, *, cached: bool, layers: Layers = None) -> JSON:
        """A ``tools/list`` page of the tools ``layers`` show; ``cached``: serve it from
        (and keep it in) the serialized pages, for a session of the newest stateful
        revision whose answer is sent as is (an older revision's, or a stateless
        request's, is adapted item by item). The pages hold what the server's own rules
        show; a session with rules of its own is listed afresh."""
        if not cached or (layers is not None and layers[1] is not None):
            tools = self.visible("tool", self.tools, layers)
            return self.page(params, [t.definition for t in tools], "tools",
                             [t.wire_size() for t in tools])
        cursor = params.get("cursor")
        key = cursor if isinstance(cursor, str) or cursor is None else None
        hit = self._tool_pages.get(key) if key is not None or cursor is None else None
        if hit is not None:
            return dict(hit)
        tools = self.visible("tool", self.tools, layers)
        result = self.page(params, [t.definition for t in tools], "tools",
                           [t.wire_size() for t in tools])
        result["tools"] = orjson.Fragment(compact(orjson.dumps(result["tools"])))  # kept
        if len(self._tool_pages) < MAX_CACHED_PAGES:
            self._tool_pages[key] = result
        return dict(result)


def decorator(register: Callable[[F], object]) -> Callable[[F], F]:
    """A decorator that hands the function to ``register`` and returns it unchanged (the
    ``@server.tool(...)`` family are this over the ``add_*`` methods)."""

    def decorate(fn: F) -> F:
        register(fn)
        return fn

    return decorate


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"mcpkit:{offset}".encode()).decode().rstrip("=")


def _bad_cursor() -> InvalidParams:
    return InvalidParams(
        "Invalid params: the cursor is not one this server issued (or it expired); call "
        "again without a cursor to start from the first page."
    )


def _decode_cursor(cursor: Any) -> int:
    if not isinstance(cursor, str) or len(cursor) > 64:
        raise _bad_cursor()
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        prefix, _, num = text.partition(":")
        if prefix != "mcpkit" or not num.isdigit():
            raise ValueError
        return int(num)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise _bad_cursor() from None
