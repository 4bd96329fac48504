"""Design lint of what tool calls returned, and of the errors the probes provoked.

``LINT.response-size`` (bounded text results), ``LINT.actionable-errors`` (error messages
that say what went wrong in words the model can act on) and ``LINT.error-structured-content``
(no structuredContent on an error result). They judge only what the probes' calls brought
back (:class:`~mcpkit.check.lint.input.ToolCall`,
:class:`~mcpkit.check.lint.input.ProvokedError`); the server is asked nothing more.
"""

from __future__ import annotations

import re
from typing import Any

from .common import Check, Outcome, offenders, quantity, shorten, with_exchanges
from .input import LintInput, ProvokedError

MAX_RESULT_CHARS = 20_000
"""Text content above this many characters floods the model's context window."""

MIN_ERROR_WORDS = 4
"""An actionable error message needs at least this many words."""


def _text_chars(result: dict[str, Any]) -> int:
    """Characters of text in a result's content: text blocks and embedded text resources."""
    content = result.get("content")
    total = 0
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        text = block.get("text")
        resource = block.get("resource")
        if isinstance(text, str):
            total += len(text)
        elif isinstance(resource, dict) and isinstance(resource.get("text"), str):
            total += len(resource["text"])
    return total


def _check_response_size(data: LintInput) -> Outcome:
    """Each successful call (a result without ``isError: true``) returns at most
    :data:`MAX_RESULT_CHARS` characters of text content."""
    ok = [c for c in data.calls or () if isinstance(c.result, dict)
          and c.result.get("isError") is not True]
    if not ok:
        return "n/a", "No successful tool call to judge.", ""
    sized = [(c, _text_chars(c.result)) for c in ok if c.result is not None]
    big = [(c, n) for c, n in sized if n > MAX_RESULT_CHARS]
    if not big:
        largest = max(n for _, n in sized)
        return ("pass", f"All {quantity(len(ok), 'successful call')} returned at most "
                f"{largest:,} characters of text.", "")
    shown = [f"{shorten(str(c.tool))} ({n:,} characters)" for c, n in big]
    return (
        "fail",
        f"More than {MAX_RESULT_CHARS:,} characters of text in "
        f"{offenders(shown, len(ok), 'successful call')}. Bound results: a max_results "
        "parameter with a small default, truncated/total_available fields, pagination; or put "
        "a summary in content and the full data in structuredContent.",
        with_exchanges([{"tool": c.tool, "arguments": c.arguments, "textChars": n}
                        for c, n in big], (c.evidence for c, _ in big)),
    )


_GENERIC_ERRORS = frozenset({
    "error", "failed", "failure", "unknown error", "an error occurred", "something went wrong",
    "internal error", "internal server error", "server error", "invalid params",
    "invalid parameters", "invalid parameter", "invalid param", "invalid arguments",
    "invalid argument", "invalid input", "invalid value", "invalid request", "bad request",
    "bad arguments", "not found", "tool not found", "resource not found", "method not found",
    "unknown tool", "unknown resource", "unknown method", "validation error",
    "validation failed", "access denied", "permission denied", "forbidden", "unauthorized",
    "invalid cursor",
})


def _error_problems(err: ProvokedError) -> list[str]:
    message = err.message if isinstance(err.message, str) else ""
    words = re.findall(r"\w+", message)
    if not words:
        return ["no message"]
    problems = []
    if " ".join(w.lower() for w in words) in _GENERIC_ERRORS:
        problems.append("a generic phrase")
    elif len(words) < MIN_ERROR_WORDS:
        problems.append(f"only {quantity(len(words), 'word')}")
    expected = [w for w in err.expected_words or () if isinstance(w, str) and w]
    if expected and not any(
        re.search(rf"(?<!\w){re.escape(w)}(?!\w)", message, re.IGNORECASE) for w in expected
    ):
        problems.append(f"does not name {' or '.join(shorten(w, 40) for w in expected[:3])}")
    return problems


def _check_actionable_errors(data: LintInput) -> Outcome:
    """Each provoked error message has at least :data:`MIN_ERROR_WORDS` words, is not just a
    generic phrase (``Invalid params``, ``Not found``, ``Unknown tool``, … compared in lower
    case without punctuation) and, when the probe names words it should mention (the unknown
    tool, the bad parameter), mentions at least one of them as a whole word."""
    provoked = list(data.provoked or ())
    if not provoked:
        return "n/a", "No error was provoked.", ""
    bad = [(e, p) for e in provoked if (p := _error_problems(e))]
    if not bad:
        return ("pass", f"All {quantity(len(provoked), 'provoked error')} say what went wrong "
                "in words the model can act on.", "")
    shown = [f"{e.probe} → {shorten(str(e.message), 60)!r} ({'; '.join(p)})" for e, p in bad]
    return (
        "fail",
        f"Messages the model cannot act on in {offenders(shown, len(provoked), 'provoked error')}. "
        "Say "
        "what went wrong, naming the tool or parameter, what a valid request looks like and "
        "what to do instead (e.g. \"Unknown tool 'serch_docs'. Available tools: search_docs, "
        "get_page.\").",
        with_exchanges([{"probe": e.probe, "message": e.message} for e, _ in bad],
                       (e.evidence for e, _ in bad)),
    )


def _check_error_structured_content(data: LintInput) -> Outcome:
    """No call result with ``isError: true`` carries a ``structuredContent`` key."""
    errors = [c for c in data.calls or () if isinstance(c.result, dict)
              and c.result.get("isError") is True]
    if not errors:
        return "n/a", "No tool call returned an error result.", ""
    bad = [c for c in errors if c.result is not None and "structuredContent" in c.result]
    if not bad:
        return ("pass", f"None of the {quantity(len(errors), 'error result')} carries "
                "structuredContent.", "")
    return (
        "fail",
        "structuredContent in "
        f"{offenders([shorten(str(c.tool)) for c in bad], len(errors), 'error result')}. Report a "
        "tool error only in content text with isError: true; structuredContent must match "
        "outputSchema and is for successful results.",
        with_exchanges([{"tool": c.tool, "arguments": c.arguments} for c in bad],
                       (c.evidence for c in bad)),
    )


CHECKS: dict[str, Check] = {
    "LINT.response-size": _check_response_size,
    "LINT.actionable-errors": _check_actionable_errors,
    "LINT.error-structured-content": _check_error_structured_content,
}
"""The ``LINT.*`` rules of this module -> their checks."""
