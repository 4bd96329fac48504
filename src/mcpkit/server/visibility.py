"""Which components a client sees: ``enable`` and ``disable`` by name, tag and kind.

A server's tools, resources, resource templates and prompts carry ``tags`` (a set of
strings given at declaration). ``Server.disable(tags={"admin"})`` hides every component
with one of those tags, ``Server.enable(...)`` shows them again, and
``Server.enable(tags={"public"}, only=True)`` shows only what matches (of the kinds it
names, all four by default). A hidden component is absent from the listings and is
unknown to calls, reads, ``prompts/get`` and completions, with the same error as a name
that was never registered (so a hidden name does not leak through an error message).

The rules are kept in the order they were given, and for each component the last rule
that speaks about it decides: a rule speaks about the components that match all of its
criteria (``names``: a tool's or prompt's name, a resource's URI or name, a template's URI
template or name; ``tags``: one of them; ``kinds``: ``"tool"``, ``"resource"``,
``"template"``, ``"prompt"``), and an ``only`` rule speaks about every component of its
kinds (showing what matches, hiding the rest). A rule with the same criteria as an
earlier one replaces it, so switching a flag back and forth keeps the list short.

A session can layer rules of its own over the server's (``Context.enable_components``,
``disable_components``, ``reset_visibility``), seen by that session only; the server's
rules come first, so a session's rule can show what the server hid. Each change sends
``notifications/<kind>/list_changed`` for the kinds whose visible set it changed, to
every session for the server's rules, to that session for its own.

A server that sets no rule pays nothing: the listings and lookups test one attribute.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

KINDS = ("tool", "resource", "template", "prompt")
LIST_KIND = {"tool": "tools", "resource": "resources", "template": "resources",
             "prompt": "prompts"}
"""A component kind -> the listing whose ``list_changed`` says it changed."""
MAX_RULES = 1024
"""Rules one server, or one session, keeps at most (a rule with the criteria of an
earlier one replaces it; past this, group components with tags)."""


def check_tags(value: Any, where: str = "tags") -> frozenset[str]:
    """A declaration's ``tags`` as a frozenset of non-empty strings; ``TypeError`` for a
    bare string (``tags="read"`` would be four one-letter tags) or anything else."""
    if isinstance(value, str | bytes):
        raise TypeError(f"{where} takes a set of strings, such as {{{value!r}}}; got the "
                        f"string {value!r:.60}")
    try:
        tags = frozenset(value)
    except TypeError:
        raise TypeError(f"{where} takes a set of strings; got {type(value).__name__}"
                        ) from None
    for tag in tags:
        if not isinstance(tag, str) or not tag:
            raise TypeError(f"{where} takes non-empty strings; got {tag!r:.60}")
    return tags


def keys(kind: str, item: Any) -> tuple[str, ...]:
    """What ``names`` matches a component by."""
    if kind == "resource":
        return item.uri, item.name
    if kind == "template":
        return item.uri_template, item.name
    return (item.name,)


class Rule:
    """One ``enable`` or ``disable``: what it matches and what it makes of it."""

    __slots__ = ("enable", "kinds", "names", "only", "tags")

    def __init__(self, enable: bool, names: frozenset[str], tags: frozenset[str],
                 kinds: frozenset[str], only: bool) -> None:
        self.enable = enable
        self.names = names
        self.tags = tags
        self.kinds = kinds
        self.only = only

    def selector(self) -> tuple[frozenset[str], frozenset[str], frozenset[str], bool]:
        return self.names, self.tags, self.kinds, self.only

    def matches(self, kind: str, item: Any) -> bool:
        """Whether ``item`` meets the rule's names and tags (its kinds are tested apart)."""
        if self.names and not any(k in self.names for k in keys(kind, item)):
            return False
        return not self.tags or not self.tags.isdisjoint(item.tags)


def make_rule(enable: bool, names: Iterable[str] | None, tags: Iterable[str] | None,
              kinds: Iterable[str] | None, only: bool) -> Rule:
    """A rule from ``enable``/``disable``'s arguments; ``ValueError`` or ``TypeError``
    for arguments that cannot mean anything."""
    name_set = check_tags(names or (), "names")
    tag_set = check_tags(tags or (), "tags")
    kind_set = check_tags(kinds or KINDS, "kinds")
    unknown = kind_set - set(KINDS)
    if unknown:
        raise ValueError(f"unknown kinds {sorted(unknown)}: use {', '.join(KINDS)}")
    if only and not enable:
        raise ValueError("only=True goes with enable (show only what matches)")
    if not (name_set or tag_set or kinds or only):
        raise ValueError("say what to match: names=, tags= or kinds= (to undo every rule, "
                         "reset_visibility())")
    return Rule(enable, name_set, tag_set, kind_set, only)


class Visibility:
    """Ordered rules; for a component, the last rule that speaks about it decides."""

    __slots__ = ("rules",)

    def __init__(self) -> None:
        self.rules: list[Rule] = []

    def add(self, rule: Rule) -> None:
        """Append ``rule``, dropping the earlier rules it makes meaningless."""
        if rule.only:  # it decides every component of its kinds
            kept = [r for r in self.rules if not r.kinds <= rule.kinds]
        else:
            kept = [r for r in self.rules if r.selector() != rule.selector()]
        if len(kept) >= MAX_RULES:
            raise ValueError(f"more than {MAX_RULES} visibility rules: give the components "
                             "tags and enable or disable them by tag")
        kept.append(rule)
        self.rules = kept


def shows(layers: Iterable[Visibility | None], kind: str, item: Any) -> bool:
    """Whether ``item`` (a component of ``kind``) is visible under ``layers`` in order."""
    visible = True
    for layer in layers:
        if layer is None:
            continue
        for rule in layer.rules:
            if kind not in rule.kinds:
                continue
            if rule.only:
                visible = rule.matches(kind, item)
            elif rule.matches(kind, item):
                visible = rule.enable
    return visible


def listings(rules: Iterable[Rule]) -> list[str]:
    """The listings (``tools``, ``resources``, ``prompts``) ``rules`` can change."""
    kinds = {LIST_KIND[k] for rule in rules for k in rule.kinds}
    return [k for k in ("tools", "resources", "prompts") if k in kinds]


def revise_session(session: Any, rule: Rule | None) -> None:
    """Add ``rule`` to ``session``'s own rules (None: drop them all), and send the session
    ``list_changed`` for each listing the change may have changed."""
    own: Visibility | None = session.visibility
    if rule is None:
        touched = listings(own.rules) if own is not None else []
        session.visibility = None
    else:
        if own is None:
            own = Visibility()
        own.add(rule)
        session.visibility = own
        touched = listings([rule])
    for kind in touched:
        session.notify(f"notifications/{kind}/list_changed")


def revise(registry: Any, rule: Rule | None) -> None:
    """Add ``rule`` to the server's rules (None: drop them all) and announce each listing
    whose visible set changed (to every session, and to a server mounting this one)."""
    before = registry.seen(registry.layers(None))
    if rule is None:
        registry.visibility = None
    else:
        own: Visibility = registry.visibility or Visibility()
        own.add(rule)
        registry.visibility = own
    registry.revised(before)
