"""``LINT.costly-pattern``: a ``pattern`` that repeats a Unicode class a bounded number of
times (``^[\\w.-]{1,100}$``, ``\\p{L}{1,50}``).

Such a pattern is cheap for Python's ``re`` but not for the automaton-based engines many
servers validate with: pydantic-core (Rust ``regex``) compiles a bounded repetition by
unrolling it, each copy holding the whole Unicode class, when the server builds its
validators at start-up. Measured with pydantic-core 2.x (RSS of one ``TypeAdapter``, in
a process already holding another): ``\\w{1,8}`` 1.1 MB, ``\\w{1,16}`` 2.0 MB,
``\\w{1,32}`` 3.5 MB, ``\\w{1,64}`` 6.4 MB, ``[\\w.-]{1,100}`` 9.6 MB, ``\\p{L}{1,50}``
4.7 MB, about 0.1 MB per repetition; the same bound on an ASCII class
(``[A-Za-z0-9_.-]{1,100}``) 0.1 MB, ``\\w+`` 0.3 MB, ``\\d{1,10}``, ``\\s{0,20}`` and
``[^/]{1,100}`` under 0.5 MB. One such parameter was 9 MB of the idle memory of
``examples/everything.py`` (issue #28). The cheaper forms say the same: an ASCII class
where ASCII is meant, or an unbounded ``+`` with ``maxLength`` for the length.

The scan is a small tokenizer of the pattern (escapes, bracket classes, groups,
quantifiers), bounded by the pattern's length; it never compiles the pattern.
"""

from __future__ import annotations

import re
from typing import Any

from .common import Check, Outcome, input_schema, offenders, quantity, shorten, tool_views
from .input import LintInput

MB_PER_REPEAT = 0.1
"""The measured cost of one repetition of ``\\w`` (or ``\\p{L}``) in pydantic-core."""
FLAGGED_MB = 1.5
"""A pattern whose estimate reaches this is reported (``\\w{1,16}`` and up)."""
MAX_PATTERN = 2000
"""Characters of a pattern scanned (a longer one is judged on its start)."""
_MAX_NODES = 5000
"""Schema nodes visited per tool (a hostile schema cannot make the walk long)."""
_BOUND = re.compile(r"\{(\d{1,6})(,(\d{0,6}))?\}")
_UNICODE_ESCAPES = frozenset("wWpP")


def _class_end(pattern: str, start: int) -> tuple[int, bool]:
    """The index after the bracket class opening at ``start``, and whether it holds a
    Unicode class escape (``\\w``, ``\\p{...}``)."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1  # a leading ']' is a literal
    wide = False
    while i < len(pattern) and pattern[i] != "]":
        if pattern[i] == "\\" and i + 1 < len(pattern):
            wide = wide or pattern[i + 1] in _UNICODE_ESCAPES
            i += 2
            continue
        i += 1
    return i + 1, wide


def _escape_end(pattern: str, i: int) -> int:
    """The index after the escape at ``i`` (``\\p{Letter}`` is one escape)."""
    if pattern[i + 1:i + 2] in ("p", "P") and pattern[i + 2:i + 3] == "{":
        close = pattern.find("}", i + 3)
        return len(pattern) if close < 0 else close + 1
    return i + 2 + (pattern[i + 1:i + 2] in ("p", "P"))  # \pL: one letter after


def costly_repeats(pattern: str) -> list[tuple[str, int]]:
    """The bounded repetitions of a Unicode class in ``pattern``: each atom (as written)
    and its upper bound. A group counts as Unicode when anything inside it is."""
    text = pattern[:MAX_PATTERN]
    found: list[tuple[str, int]] = []
    groups: list[tuple[int, bool]] = []  # (start, holds a Unicode class) of open groups
    i = 0
    atom: tuple[int, bool] | None = None  # (start, is Unicode) of the last atom
    while i < len(text):
        c = text[i]
        start = i
        if c == "\\" and i + 1 < len(text):
            i = _escape_end(text, i)
            atom = (start, text[start + 1] in _UNICODE_ESCAPES)
        elif c == "[":
            i, wide = _class_end(text, i)
            atom = (start, wide)
        elif c == "(":
            groups.append((i, False))
            i += 1
            atom = None
            continue
        elif c == ")":
            opened, wide = groups.pop() if groups else (0, False)
            i += 1
            atom = (opened, wide)
        elif c == "{" and atom is not None and (m := _BOUND.match(text, i)):
            upper = m.group(3) if m.group(2) else m.group(1)
            if atom[1] and upper:  # {m,} is unbounded: no unrolling
                found.append((text[atom[0]:i], int(upper)))
            i = m.end()
            atom = None
            continue
        else:
            i += 1
            atom = None if c in "*+?|^$" else (start, False)
        if atom is not None and atom[1] and groups:
            groups[-1] = (groups[-1][0], True)
    return found


def _patterns(schema: Any) -> list[str]:
    """Every ``pattern`` string of a schema, nested ones included (bounded walk)."""
    out: list[str] = []
    stack = [schema]
    seen = 0
    while stack and seen < _MAX_NODES:
        node = stack.pop()
        seen += 1
        if isinstance(node, dict):
            value = node.get("pattern")
            if isinstance(value, str):
                out.append(value)
            stack.extend(v for k, v in node.items() if k != "pattern")
        elif isinstance(node, list):
            stack.extend(node)
    return out


def _check_costly_pattern(data: LintInput) -> Outcome:
    """Flags each input-schema ``pattern`` whose bounded Unicode repetitions add up to
    :data:`FLAGGED_MB` or more at :data:`MB_PER_REPEAT` a repetition."""
    judged = 0
    bad: list[tuple[str, str, float]] = []
    for tool in tool_views(data.tools):
        for pattern in _patterns(input_schema(tool)):
            judged += 1
            repeats = costly_repeats(pattern)
            cost = sum(bound for _, bound in repeats) * MB_PER_REPEAT
            if cost >= FLAGGED_MB:
                bad.append((tool.label, pattern, cost))
    if not judged:
        return "n/a", "No input schema has a pattern.", ""
    if not bad:
        return ("pass", f"None of the {quantity(judged, 'pattern')} repeats a Unicode class "
                "enough to cost memory in an automaton-based validator.", "")
    shown = [f"{label}: {shorten(pattern, 40)!r} (~{cost:.0f} MB)" for label, pattern, cost
             in bad]
    return (
        "fail",
        f"Patterns that repeat a Unicode class (\\w, \\p{{...}}) a bounded number of times, in "
        f"{offenders(shown, judged, 'pattern')}. A server validating with pydantic-core (Rust "
        "regex) compiles each into an automaton of about 0.1 MB per repetition when it "
        "starts. Say the same more cheaply: an ASCII class where ASCII is meant "
        "([A-Za-z0-9_] for \\w: 0.1 MB), or \\w+ with maxLength for the length.",
        [{"tool": label, "pattern": pattern, "estimated_mb": round(cost, 1)}
         for label, pattern, cost in bad],
    )


CHECKS: dict[str, Check] = {"LINT.costly-pattern": _check_costly_pattern}
"""The ``LINT.*`` rule of this module -> its check."""
