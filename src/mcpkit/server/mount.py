"""Composition: ``Server.mount(prefix, child)`` serves another ``Server``'s tools, prompts,
resources, resource templates and completions as the parent's own, namespaced.

The names (one rule each way, so everything round-trips):

- a tool or prompt ``name`` is served as ``<prefix>_<name>``. The prefix is 1-64 of
  ``A-Z a-z 0-9 . -`` starting with a letter: every character is allowed in a tool name
  (2025-11-25, SEP-986: ``A-Z a-z 0-9 _ - .``), and as the prefix holds no ``_`` the
  first ``_`` of a served name always ends the prefix, so two mounts can never produce
  the same name. A served tool name longer than 128 characters is refused.
- a resource URI or template ``uri`` is served as ``<prefix in lowercase>+<uri>``: the
  prefix joins the URI's scheme (``file:///a.txt`` -> ``weather+file:///a.txt``), which
  RFC 3986 allows (``scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )``) for any
  absolute URI, hierarchical or not. Everything after the scheme is untouched, so a
  template's ``{variables}`` match exactly what they matched in the child; contents a
  child returns with URIs of its own are renamed the same way.
- a completion of a prompt or template argument is keyed by the served name or template.

Nothing is serialized: the parent holds copies of the child's ``Tool``/``Prompt``/
``Resource``/``ResourceTemplate`` objects under the served names, so a call runs the
child's function directly on the parent's request path (validation, tasks, MRTR, rate
limits, scopes and audit of the parent apply). Its ``Context`` is the parent's request
context (progress, logging, cancellation, elicitation, sampling and roots go through the
parent's session, stateful or 2026-07-28 stateless) with ``ctx.server`` set to the child,
so ``ctx.lifespan`` is the child's. The child's lifespan is entered inside the parent's.

What the child's own rules hide (``Server.disable``) is not served; the copies keep their
``tags``, so the parent's rules select them too. Changes follow: the child's registries
tell this mount of every change (``followers``, its rules' changes included),
and it brings the parent's copies in step and announces the parent's ``list_changed``;
the child's ``notify_resource_updated(uri)`` reaches the parent's subscribers as the
served URI. A name that would collide with one the parent has is a ``ValueError`` at
mount time and, for a later addition to the child, at that ``add_*`` call (``claims``).
A mount of a server that itself mounts others (nesting) composes the rules: ``a_b_t``,
``a+b+file:///x``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..session import HandlerResult
from .context import Context
from .prompts import Prompt
from .registry import Completer, CompletionKey, Registry
from .resources import Resource, ResourceTemplate
from .tools import TOOL_NAME, Tool
from .visibility import shows

if TYPE_CHECKING:
    from .app import Server

log = logging.getLogger("mcpkit.server")
M = TypeVar("M")
JSON = dict[str, Any]
PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9.-]{0,63}$")
TABLES = ("tools", "prompts", "resources", "templates", "completers")
KINDS = {"tools": ("tools",), "prompts": ("prompts",), "resources": ("resources", "templates"),
         "completions": ("completers",)}
"""A change of a kind (what ``Registry.followers`` are told) -> the tables it touches."""


class MountedTool(Tool):
    """A child's tool served under the parent's name for it; runs with ``ctx.server`` set
    to the server that registered it (``home``)."""

    home: Server
    source: Any  # the child's object this copies

    def call(self, arguments: JSON, ctx: Context) -> HandlerResult:
        ctx.server = self.home
        return Tool.call(self, arguments, ctx)


class MountedPrompt(Prompt):
    """A child's prompt served under the parent's name for it."""

    home: Server
    source: Any  # the child's object this copies

    async def render(self, arguments: dict[str, str], ctx: Context) -> JSON:
        ctx.server = self.home
        return await Prompt.render(self, arguments, ctx)


class MountedResource(Resource):
    """A child's resource served at the parent's URI for it; ``outer`` is what was put
    before the URI, over every level of mounting."""

    home: Server
    source: Any  # the child's object this copies
    outer: str

    async def read(self, ctx: Context) -> list[JSON]:
        ctx.server = self.home
        return await Resource.read(self, ctx)

    def contents(self, uri: str, value: Any) -> list[JSON]:
        return _served(self.outer, Resource.contents(self, uri, value), value)


class MountedTemplate(ResourceTemplate):
    """A child's resource template served at the parent's template for it (its pattern is
    the child's, behind ``outer``)."""

    home: Server
    source: Any  # the child's object this copies
    outer: str

    async def read(self, uri: str, values: dict[str, str], ctx: Context) -> list[JSON]:
        ctx.server = self.home
        return await ResourceTemplate.read(self, uri, values, ctx)

    def contents(self, uri: str, value: Any) -> list[JSON]:
        return _served(self.outer, ResourceTemplate.contents(self, uri, value), value)


def _served(outer: str, contents: list[JSON], value: Any) -> list[JSON]:
    """``contents`` with the URIs the child wrote itself (a returned list of contents)
    renamed to the served ones; contents built from a plain value already carry the URI
    the client asked for."""
    if contents is not value:
        return contents
    return [{**c, "uri": outer + c["uri"]} for c in contents]


def _adopt(cls: type[M], item: Any, home: Server, **fields: Any) -> M:
    """A ``cls`` copy of ``item`` (its attributes shared, ``fields`` replaced); a copy of
    a copy (nested mounts) keeps the innermost ``home``."""
    copy = object.__new__(cls)
    copy.__dict__.update(item.__dict__)
    copy.__dict__.setdefault("home", home)
    copy.__dict__.update(fields)
    return copy


def _rehomed(fn: Completer, home: Server) -> Completer:
    """``fn`` run with its ``Context`` (when it takes one) pointing at ``home``."""

    def complete(value: str, context: JSON, **extra: Context) -> Any:
        for ctx in extra.values():
            ctx.server = home
        return fn(value, context, **extra)

    return complete


class Mount:
    """One child served in one parent under ``prefix`` (see the module docstring)."""

    def __init__(self, parent: Registry, prefix: str, child: Server,
                 child_registry: Registry) -> None:
        if not isinstance(prefix, str) or not PREFIX.match(prefix):
            raise ValueError(
                f"invalid mount prefix {prefix!r}: use 1-64 characters of A-Z a-z 0-9 . - "
                "starting with a letter (no '_': it separates the prefix from the name)")
        self.prefix = prefix
        self.scheme = prefix.lower() + "+"
        self.child = child
        self._parent = parent
        self._source = child_registry
        #: What this mount put in each parent table: served key -> the object put there.
        self._owned: dict[str, dict[Any, Any]] = {t: {} for t in TABLES}

    # ------------------------------------------------------------------ names

    def served_name(self, name: str) -> str:
        return f"{self.prefix}_{name}"

    def served_uri(self, uri: str) -> str:
        return self.scheme + uri

    def _served_key(self, table: str, key: str) -> str:
        return self.served_uri(key) if table in ("resources", "templates") else (
            self.served_name(key))

    def _target(self, table: str) -> dict[Any, Any]:
        parent = self._parent
        targets: dict[str, dict[Any, Any]] = {
            "tools": parent.tools, "prompts": parent.prompts, "resources": parent.resources,
            "templates": parent.templates, "completers": parent.completers}
        return targets[table]

    # ------------------------------------------------------------------ the copies

    def _wanted(self, table: str) -> dict[Any, Any]:
        """What the parent's ``table`` should hold from the child now: served key -> copy
        (the copy already served is kept while the child's object is the same one, so a
        change copies only what changed)."""
        src = self._source
        if table == "completers":
            home = self.child
            return {self._completion_key(k): (_rehomed(fn, home), param)
                    for k, (fn, param) in src.completers.items()}
        tables: dict[str, dict[str, Any]] = {
            "tools": src.tools, "prompts": src.prompts, "resources": src.resources,
            "templates": src.templates}
        items = tables[table]
        owned = self._owned[table]
        wanted: dict[Any, Any] = {}
        rules = src.layers(None)  # what the child hides, the parent does not serve
        kind = table[:-1]
        for key, item in items.items():
            if rules is not None and not shows(rules, kind, item):
                continue
            served = self._served_key(table, key)
            kept = owned.get(served)
            wanted[served] = kept if kept is not None and kept.source is item else (
                self._copy(table, served, item))
        return wanted

    def _copy(self, table: str, served: str, item: Any) -> Any:
        """The parent's copy of the child's ``item``, served as ``served``."""
        home = self.child
        if table == "tools":
            return _adopt(MountedTool, item, home, source=item, name=served,
                          definition={**item.definition, "name": served})
        if table == "prompts":
            return _adopt(MountedPrompt, item, home, source=item, name=served)
        outer = self.scheme + getattr(item, "outer", "")
        if table == "resources":
            return _adopt(MountedResource, item, home, source=item, uri=served, outer=outer)
        return _adopt(MountedTemplate, item, home, source=item, uri_template=served,
                      outer=outer, regex=re.compile(
                          "^" + re.escape(self.scheme) + item.regex.pattern[1:]))

    def _completion_key(self, key: CompletionKey) -> CompletionKey:
        kind, ref, argument = key
        if kind == "ref/prompt":
            return kind, self.served_name(ref), argument
        return kind, self.served_uri(ref), argument

    def _problem(self, table: str, key: Any) -> str | None:
        """Why the copy served as ``key`` cannot go into the parent's ``table`` (None: it
        can)."""
        if table == "tools" and not TOOL_NAME.match(key):
            return (f"tool {key!r} would be {len(key)} characters; tool names have at most "
                    "128: use a shorter prefix or tool name")
        target = self._target(table)
        if key in target and target[key] is not self._owned[table].get(key):
            what = {"tools": "a tool named", "prompts": "a prompt named",
                    "resources": "a resource at", "templates": "a resource template",
                    "completers": "a completion for"}[table]
            return (f"{what} {key!r} is already registered in the parent; give the mount "
                    "another prefix or rename one of them")
        return None

    def attach(self) -> None:
        """Put every copy in the parent (``ValueError`` naming each collision first, with
        nothing changed) and follow the child from now on."""
        problems = []
        for table in TABLES:
            for key in self._wanted(table):
                problem = self._problem(table, key)
                if problem is None and table != "completers":
                    try:  # and what a server mounting the parent could not serve
                        self._parent.claim(table, key)
                    except ValueError as exc:
                        problem = str(exc)
                if problem is not None:
                    problems.append(problem)
        if problems:
            raise ValueError(f"cannot mount {self.child.name!r} at {self.prefix!r}: "
                             + "; ".join(problems[:10]))
        for kind in KINDS:
            self._sync(kind, announce=kind != "completions")
        self._source.followers.append(self._follow)
        self._source.claims.append(self._claim)

    def _follow(self, kind: str) -> None:
        """The child's ``kind`` changed: bring the parent's copies in step and announce."""
        self._sync(kind, announce=kind != "completions")

    def _sync(self, kind: str, *, announce: bool) -> None:
        for table in KINDS[kind]:
            target, owned = self._target(table), self._owned[table]
            wanted = self._wanted(table)
            for key, obj in list(owned.items()):
                if key not in wanted:
                    if target.get(key) is obj:
                        del target[key]
                    del owned[key]
            for key, obj in wanted.items():
                problem = self._problem(table, key)
                if problem is not None:  # the parent registered it since: the parent's wins
                    log.error("mount %r of %r: not serving it: %s", self.prefix,
                              self.child.name, problem)
                    owned.pop(key, None)
                    continue
                target[key] = owned[key] = obj
        if announce:
            self._parent.changed(kind)
        else:
            for follow in self._parent.followers:
                follow(kind)

    def _claim(self, table: str, key: str) -> None:
        """The child is about to add ``key`` to its ``table``: refuse what the parent (or a
        server mounting the parent) could not serve."""
        served = self._served_key(table, key)
        problem = self._problem(table, served)
        if problem is not None:
            raise ValueError(f"{self.child.name!r} is mounted in another server at "
                             f"{self.prefix!r}: {problem}")
        self._parent.claim(table, served)

    def relay_update(self, relay: Callable[[str], None]) -> Callable[[str], None]:
        """A ``Peers.relays`` hook passing a child's resource update to ``relay`` with the
        served URI."""
        return lambda uri: relay(self.served_uri(uri))


def mount(parent: Server, prefix: str, child: Server) -> None:
    """``parent.mount(prefix, child)`` (see ``Server.mount``)."""
    from .limits import RateLimit

    if not hasattr(child, "_registry"):
        raise ValueError(f"mount() takes an mcpkit Server, got {child!r}")
    if _reaches(child, parent):
        raise ValueError(f"cannot mount {child.name!r} in {parent.name!r}: it is "
                         f"{parent.name!r} or mounts it, and a server cannot contain itself")
    taken = {p.lower(): p for p in parent.mounts}
    if isinstance(prefix, str) and prefix.lower() in taken:
        raise ValueError(f"the prefix {prefix!r} is taken by the mount of "
                         f"{parent.mounts[taken[prefix.lower()]].name!r} (prefixes are "
                         "compared ignoring case, as URI schemes are)")
    link = Mount(parent._registry, prefix, child, child._registry)
    link.attach()
    child._peers.relays.append(link.relay_update(parent._peers.resource_updated))
    parent._lifespan.inner.append(child.lifespan_scope)
    if child.instructions:
        part = (f"Tools and prompts named {prefix}_* and resources at "
                f"{link.scheme}* come from {child.name!r}: {child.instructions}")
        parent.instructions = (f"{parent.instructions}\n\n{part}" if parent.instructions
                               else part)
    if not parent.mounts:  # a mounted tool with a rate limit of its own needs the watch
        def limited(kind: str) -> None:
            if kind == "tools" and any(isinstance(t.rate_limit, RateLimit)
                                       for t in parent._registry.tools.values()):
                parent._compose()  # puts the call watch in the chain (app.py)

        parent._registry.followers.append(limited)
        limited("tools")
    parent.mounts[prefix] = child


def _reaches(server: Server, target: Server) -> bool:
    """Whether ``server`` is ``target`` or mounts it, at any depth."""
    return server is target or any(_reaches(c, target) for c in server.mounts.values())
