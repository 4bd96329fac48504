"""Verdicts for the rows of the compliance matrix (M011-M089, S001-S030, A001-A026; the
envelope rows M001-M010 are judged in :mod:`mcpkit.check.matrix.envelope`).

Each row is either judged from what the probes observed (:class:`Facts`), or listed as
*untestable* with the reason: most such rows bind the client (the checker *is* the client),
or need an event the checker cannot cause (a resource changing). A row that does not apply
to what the server offers (no resources, stdio transport, the stateless era) is *n/a*.
A message a row fails is marked blamed so that ``WIRE.schema`` does not report it again.

This module decides how each row is judged: untestable, n/a in the stateless era, a
permission (nothing the server could fail), or by its judge, which lives with its part of
the matrix: :mod:`~mcpkit.check.matrix.lifecycle` (batching, lifecycle),
:mod:`~mcpkit.check.matrix.transport` (stdio, HTTP, sessions),
:mod:`~mcpkit.check.matrix.auth` (authorization),
:mod:`~mcpkit.check.matrix.features` (resources, prompts, tools) and
:mod:`~mcpkit.check.matrix.utilities` (ping, cancellation, progress, logging, completion,
pagination).
"""

from __future__ import annotations

from ..facts import Facts
from ..model import Finding
from ..rules import finding, matrix
from . import (
    auth,
    features,
    lifecycle,
    transport,
    utilities,
)
from .common import Judge, Judgement, na

CLIENT = ("A requirement on the client; the checker is the client, so the server has "
          "nothing to show.")
AUTH_CLIENT = ("A requirement on the MCP client as OAuth client (discovery, metadata, how "
               "tokens are sent); a server has nothing to show for it.")

UNTESTABLE: dict[str, str] = {
    **dict.fromkeys(
        ["M012", "M017", "M019", "M020", "M021", "M024", "M029", "M039", "M040", "M041", "M043",
         "M044", "M071", "M072", "M073", "M074", "M075", "M076", "M077", "M078", "M082",
         "S001", "S007", "S013", "S015", "S017", "A006", "A009", "A010", "A021"], CLIENT),
    **dict.fromkeys(["M032", "M033", "M034", "M035", "M036", "S012"], AUTH_CLIENT),
    "M055": "Needs a resource to change, which the checker cannot cause from outside.",
    "S023": "Needs the resource list to change, which the checker cannot cause from outside.",
    "S024": "Needs the prompt list to change, which the checker cannot cause from outside.",
    "S025": "Needs the tool list to change, which the checker cannot cause from outside.",
    "S019": "Needs the server to send a request and the checker to stay silent until the "
            "server's timeout; servers rarely send requests to a client without capabilities.",
    "S020": "Follows S019: needs a server request left unanswered until it times out.",
    "S026": "Periodic pings show only over a long-lived connection; the checker's runs are "
            "short.",
    "S027": "Needs a long-running tool to cancel; the checker does not run tools for that long.",
    "S028": "About the server as a requester ignoring late responses; not observable.",
    "S029": "Relevance is a judgement about the server's data.",
    "A012": "Replaying requires a broken stream mid-response, which the checker does not force.",
    "A014": "The server may end sessions at any time; nothing to judge.",
    "A022": "About the server as a requester; not observable.",
    "A024": "Ignoring unknown cancellations leaves nothing to observe.",
}

STATELESS_NA = "The 2026-07-28 revision has no initialize, ping, batches or sessions."
STATEFUL_ONLY = frozenset({
    "M011", "M022", "M025", "M026", "M027", "M028", "M042", "M045", "M046", "M047", "M056",
    "M079", "M087", "S006", "S014", "S016", "S005", "A013", "A015", "A011", "A008",
})


def A004(facts: Facts) -> Judgement:
    return na("A permission: the server may log to stderr; the checker reads stderr only as "
              "evidence when the server dies.")


def _permission(message: str) -> Judge:
    def judge(facts: Facts) -> Judgement:
        return na(message)
    return judge


JUDGES: dict[str, Judge] = {
    **lifecycle.JUDGES,
    **transport.JUDGES,
    **auth.JUDGES,
    **features.JUDGES,
    **utilities.JUDGES,
    "A001": _permission("A permission about request params; any choice conforms."),
    "A002": _permission("A permission about notification params; any choice conforms."),
    "A003": _permission("The server may send batches; none is required."),
    "A004": A004,
    "A005": _permission("The server may send requests and notifications before a response."),
    "A007": _permission("The server may send requests and notifications on SSE streams."),
    "A008": _permission("The server may close an SSE stream at any time."),
}
"""Row id -> its judge."""


AUTH_ROWS = frozenset({"M030", "M031", "M032", "M033", "M034", "M035", "M036", "M037",
                       "M038", "S008", "S009", "S010", "S011", "S012", "A016"})
"""The 15 authorization rows (1.3), judged even when an era could not be probed because
the server requires a token the checker was not given."""


def judge_matrix(facts: Facts, only: frozenset[str] | None = None) -> list[Finding]:
    """One finding per matrix row from M011 on (the envelope rows are judged elsewhere);
    ``only``: just these rows."""
    out: list[Finding] = []
    for row in matrix():
        if only is not None and row.id not in only:
            continue
        if row.id in ("M001", "M002", "M003", "M004", "M005", "M006", "M007", "M008", "M009",
                      "M010"):
            continue
        if row.id in UNTESTABLE:
            out.append(finding(row.id, "untestable", UNTESTABLE[row.id], "", facts.era))
            continue
        if facts.era == "stateless" and row.id in STATEFUL_ONLY:
            out.append(finding(row.id, "n/a", STATELESS_NA, "", facts.era))
            continue
        judge = JUDGES.get(row.id)
        if judge is None:
            out.append(finding(row.id, "untestable", "No probe observes this row.", "",
                               facts.era))
            continue
        try:
            verdict, message, evidence = judge(facts)
        except (AttributeError, KeyError, TypeError) as exc:  # a shape we did not foresee
            verdict, message, evidence = ("fail", f"The server's answers could not be read "
                                          f"({type(exc).__name__}: {exc}).", "")
        out.append(finding(row.id, verdict, message, evidence, facts.era))
    return out
