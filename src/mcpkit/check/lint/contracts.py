"""Design lint of what each tool declares about its result and its effects.

``LINT.output-schema`` (typed results the model need not parse out of text),
``LINT.annotations`` (``readOnlyHint``, so hosts know what they may auto-approve) and
``LINT.annotations-contradictory`` (read-only and destructive at once). A field of the wrong
type is ``WIRE.schema``'s business and is skipped here.
"""

from __future__ import annotations

from .common import Check, Outcome, offenders, pick, quantity, tool_views
from .input import LintInput


def _check_output_schema(data: LintInput) -> Outcome:
    """Every tool declares ``outputSchema`` (present and not null; a value of the wrong type is
    ``WIRE.schema``'s business and skipped here)."""
    tools = tool_views(data.tools)
    if not tools:
        return "n/a", "No tools to judge.", ""
    bad = [t for t in tools if t.raw.get("outputSchema") is None]
    if not bad:
        return "pass", f"All {quantity(len(tools), 'tool')} declare outputSchema.", ""
    return (
        "fail",
        f"No outputSchema in {offenders([t.label for t in bad], len(tools), 'tool')}. "
        "Declare one and return structuredContent matching it, so the model gets typed data "
        "instead of parsing text.",
        [pick(t) for t in bad],
    )


def _check_annotations(data: LintInput) -> Outcome:
    """Every tool has ``annotations`` with ``readOnlyHint`` (annotations that are not an object
    are ``WIRE.schema``'s business and skipped here)."""
    tools = tool_views(data.tools)
    if not tools:
        return "n/a", "No tools to judge.", ""
    bad = []
    for t in tools:
        ann = t.raw.get("annotations")
        if ann is None:
            bad.append((t, "no annotations"))
        elif isinstance(ann, dict) and ann.get("readOnlyHint") is None:
            bad.append((t, "no readOnlyHint"))
    if not bad:
        return "pass", f"All {quantity(len(tools), 'tool')} set readOnlyHint.", ""
    shown = [f"{t.label} ({why})" for t, why in bad]
    return (
        "fail",
        f"No readOnlyHint annotation in {offenders(shown, len(tools), 'tool')}. Set at least "
        "readOnlyHint (true for tools that only read; false plus destructiveHint and "
        "idempotentHint for tools that change things) so hosts know what they may "
        "auto-approve.",
        [pick(t, "annotations") for t, _ in bad],
    )


def _check_annotations_contradictory(data: LintInput) -> Outcome:
    """No tool has both ``readOnlyHint: true`` and ``destructiveHint: true``."""
    annotated = [t for t in tool_views(data.tools) if isinstance(t.raw.get("annotations"), dict)]
    if not annotated:
        return "n/a", "No tool has annotations to judge.", ""
    bad = [t for t in annotated if t.raw["annotations"].get("readOnlyHint") is True
           and t.raw["annotations"].get("destructiveHint") is True]
    if not bad:
        return ("pass", f"No contradictory hints in {quantity(len(annotated), 'annotated tool')}.",
                "")
    return (
        "fail",
        "Both readOnlyHint: true and destructiveHint: true in "
        f"{offenders([t.label for t in bad], len(annotated), 'annotated tool')}. A read-only "
        "tool destroys nothing: set destructiveHint false, or readOnlyHint false if the tool "
        "does change things (a host may auto-approve a read-only tool).",
        [pick(t, "annotations") for t in bad],
    )


CHECKS: dict[str, Check] = {
    "LINT.output-schema": _check_output_schema,
    "LINT.annotations": _check_annotations,
    "LINT.annotations-contradictory": _check_annotations_contradictory,
}
"""The ``LINT.*`` rules of this module -> their checks."""
