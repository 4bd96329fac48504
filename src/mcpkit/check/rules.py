"""The checker's rule catalogue: the compliance matrix rows and the probe and lint rules.

Matrix rows (``M001``-``M089``, ``S001``-``S030``, ``A001``-``A026``) come from the
compliance matrix shipped in ``data/matrix.csv`` (a copy of the project's
``seeds/mcp-compliance-matrix.csv``). Everything else the checker judges has a stable id
here, ``AREA.name``, with its level, the report section it belongs to, a one-line title and
the spec rule it stems from (an id of ``spec/REVISIONS.md`` or the server design guide).

One failure, one rule: where two rules could blame the same defect the more specific one
takes it (a tool without ``description`` fails ``M067``, not ``WIRE.schema``); see
:mod:`mcpkit.check.matrix.envelope` (envelope rows blame a message before the schema check
skips it) and :meth:`~mcpkit.check.facts.Facts.blame`.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources

from .model import Era, Finding, Level, Verdict, trim

SECTION_MATRIX = "Compliance matrix"
SECTION_WIRE = "Wire validity"
SECTION_PROTOCOL = "Protocol behaviour"
SECTION_HTTP = "HTTP transport"
SECTION_STATELESS = "Stateless revision 2026-07-28"
SECTION_TASKS = "Tasks"
SECTION_LINT = "Design lint"
SECTION_SECURITY = "Security"
SECTION_HOSTS = "Host configuration"

SECTIONS = (
    SECTION_HOSTS,
    SECTION_SECURITY,
    SECTION_PROTOCOL,
    SECTION_HTTP,
    SECTION_STATELESS,
    SECTION_TASKS,
    SECTION_WIRE,
    SECTION_MATRIX,
    SECTION_LINT,
)
"""Report order."""


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    level: Level
    section: str
    title: str
    spec: str = ""


@dataclass(frozen=True, slots=True)
class MatrixRow:
    id: str
    level: Level
    section: str
    requirement: str


@functools.cache
def matrix() -> tuple[MatrixRow, ...]:
    """The 145 rows of the compliance matrix, in file order."""
    text = resources.files(__package__).joinpath("data/matrix.csv").read_text("utf-8")
    rows = []
    for rec in csv.DictReader(text.splitlines()):
        level = rec["Type"].strip().upper()
        assert level in ("MUST", "SHOULD", "MAY"), rec
        rows.append(MatrixRow(rec["ID"], level, rec["Section"], rec["Requirement"]))  # type: ignore[arg-type]
    return tuple(rows)


def _r(id: str, level: Level, section: str, title: str, spec: str = "") -> Rule:
    return Rule(id, level, section, title, spec)


P, H, S, W, L = SECTION_PROTOCOL, SECTION_HTTP, SECTION_STATELESS, SECTION_WIRE, SECTION_LINT
X = SECTION_SECURITY
T = SECTION_TASKS

RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        # ---- JSON-RPC and lifecycle behaviour (both eras where it applies)
        _r("RPC.parse-error", "MUST", P, "Malformed JSON is answered with -32700",
           "JSON-RPC 2.0 §5.1; R25-11.BASE.4"),
        _r("RPC.invalid-request", "MUST", P,
           "A message that is not a valid request is answered with -32600",
           "JSON-RPC 2.0 §5.1; R25-11.BASE.4"),
        _r("RPC.unknown-method", "MUST", P, "An unknown method is answered with -32601",
           "JSON-RPC 2.0 §5.1; R25-11.ERR.1"),
        _r("RPC.notification-no-reply", "MUST", P, "A notification gets no response",
           "R25-11.BASE.5"),
        _r("LIFE.request-before-initialize", "MUST", P,
           "Requests before the initialize handshake are refused, not served",
           "server design guide §1 (gate on lifecycle); R25-11.LIFE.4"),
        _r("LIFE.second-initialize", "SHOULD", P,
           "A second initialize on an initialized session is refused", "R25-11.LIFE.1"),
        _r("TOOLS.unknown-tool", "MUST", P,
           "Calling an unknown tool is a JSON-RPC error -32602, not a result",
           "R25-11.TOOLS.6; server design guide §2"),
        _r("TOOLS.invalid-arguments", "MUST", P,
           "Arguments that violate inputSchema give a result with isError: true",
           "R25-11.TOOLS.6 (SEP-1303)"),
        _r("TOOLS.structured-content", "MUST", P,
           "structuredContent conforms to the tool's outputSchema", "R25-11.TOOLS.8"),
        _r("TOOLS.input-schema-object", "MUST", P,
           "Every inputSchema is a JSON Schema object with type \"object\"", "R25-11.TOOLS.3"),
        _r("RES.unknown-resource", "SHOULD", P,
           "Reading an unknown resource is error -32002 (2026-07-28: -32602, MUST)",
           "R25-11.RES.7; R26-07.RES.3"),
        _r("LIST.pagination", "MUST", P,
           "Following nextCursor ends, never repeats a cursor or an item", "R25-11.PAGE.1"),
        _r("LIST.deterministic-order", "SHOULD", P,
           "Listing twice gives the same items in the same order",
           "R26-07.TOOLS.1; server design guide (stable sort orders)"),
        # ---- Streamable HTTP (handshake era)
        _r("HTTP.origin", "MUST", H, "A request with a foreign Origin is refused with 403",
           "R25-11.HTTP.2"),
        _r("HTTP.protocol-version-header", "MUST", H,
           "An unsupported MCP-Protocol-Version header is refused with 400", "R25-11.HTTP.19"),
        _r("HTTP.unknown-session", "MUST", H,
           "A request naming an unknown or ended session gets 404", "R25-11.HTTP.18"),
        # ---- the stateless revision
        _r("STATELESS.discover", "MUST", S,
           "server/discover answers with supportedVersions, capabilities and caching hints",
           "R26-07.VER.3, R26-07.VER.4"),
        _r("STATELESS.meta-required", "MUST", S,
           "A request without the protocol _meta fields is refused with -32602",
           "R26-07.META.2"),
        _r("STATELESS.unsupported-version", "MUST", S,
           "An unsupported protocolVersion is refused with -32022 naming supported versions",
           "R26-07.VER.1"),
        _r("STATELESS.result-type", "MUST", S, "Every result carries resultType",
           "R26-07.BASE.4"),
        _r("STATELESS.cache-hints", "MUST", S,
           "Discover, list and read results carry ttlMs and cacheScope", "R26-07.CACHE.1"),
        _r("STATELESS.server-info", "SHOULD", S,
           "Results carry io.modelcontextprotocol/serverInfo in _meta", "R26-07.META.6"),
        _r("STATELESS.removed-method", "MUST", S,
           "Methods removed in 2026-07-28 (ping, logging/setLevel, …) answer -32601",
           "R26-07.HTTP.10; REVISIONS.md §6 delta"),
        _r("STATELESS.header-version", "MUST", S,
           "MCP-Protocol-Version header disagreeing with _meta: 400 + -32020", "R26-07.HTTP.9"),
        _r("STATELESS.header-method", "MUST", S,
           "Mcp-Method missing or disagreeing with the body: 400 + -32020", "R26-07.HTTP.16"),
        _r("STATELESS.header-name", "MUST", S,
           "Mcp-Name disagreeing with params.name: 400 + -32020", "R26-07.HTTP.16"),
        _r("STATELESS.unknown-method-status", "MUST", S,
           "An unknown method over HTTP is 404 with a -32601 body", "R26-07.HTTP.10"),
        _r("STATELESS.get-delete", "SHOULD", S,
           "A stateless-only server answers GET and DELETE with 405", "R26-07.HTTP.19"),
        # ---- tasks: 2025-11-25 in core, 2026-07-28 the io.modelcontextprotocol/tasks
        # extension (SEP-2663); judged only when the server declares them
        _r("TASKS.create", "MUST", T,
           "A task-augmented tools/call is answered with a CreateTaskResult",
           "R25-11.TASKS.4; SEP-2663 (flat, resultType \"task\")"),
        _r("TASKS.fields", "MUST", T,
           "Every Task carries taskId, a valid status, ISO 8601 createdAt/lastUpdatedAt, "
           "the actual ttl and a whole pollInterval", "R25-11.TASKS.5, R25-11.TASKS.7; SEP-2663"),
        _r("TASKS.state-machine", "MUST", T,
           "Statuses move only as allowed and terminal states never change", "R25-11.TASKS.6"),
        _r("TASKS.ids", "MUST", T, "Task ids are unique and unguessable",
           "R25-11.TASKS.6, R25-11.TASKS.15"),
        _r("TASKS.unknown-id", "MUST", T, "A task id never issued is answered with -32602",
           "R25-11.TASKS.14; SEP-2663"),
        _r("TASKS.cancel-terminal", "MUST", T,
           "tasks/cancel of a terminal task: -32602 (2026-07-28: an empty ack); it stays "
           "terminal", "R25-11.TASKS.11; SEP-2663"),
        _r("TASKS.plain-call", "MUST", T,
           "A required tool called plainly gets -32601 (2026-07-28: -32021 naming the "
           "extension); a plain call never gets a task", "R25-11.TASKS.3; SEP-2663"),
        _r("TASKS.result", "MUST", T,
           "A finished task gives exactly what the plain call would (tasks/result with the "
           "related-task _meta; 2026-07-28 inlined in tasks/get)",
           "R25-11.TASKS.8; SEP-2663"),
        _r("TASKS.list", "MUST", T,
           "tasks/list pages to the end, lists the caller's tasks, and refuses a bad cursor "
           "with -32602", "R25-11.TASKS.12, R25-11.TASKS.14"),
        # ---- wire validity
        _r("WIRE.schema", "MUST", W,
           "Every message received validates against the negotiated revision's schema",
           "spec/schema/<revision>.schema.json"),
        # ---- design lint (server design guide)
        _r("LINT.tool-name", "SHOULD", L,
           "Tool names are 1-128 characters of A-Z a-z 0-9 _ - .", "R25-11.TOOLS.4"),
        _r("LINT.tool-name-unique", "SHOULD", L, "Tool names are unique", "R25-11.TOOLS.4"),
        _r("LINT.service-prefix", "LINT", L,
           "Tool names share a service prefix ({service}_{action}_{resource})",
           "server design guide: naming"),
        _r("LINT.description", "LINT", L,
           "Tool descriptions say when to use the tool and what it returns",
           "server design guide: descriptions are prompts"),
        _r("LINT.additional-properties", "LINT", L,
           "inputSchema sets additionalProperties: false, and nested objects say what "
           "other fields get", "server design guide anti-pattern 7"),
        _r("LINT.enum-like-string", "LINT", L,
           "Free strings that name a finite set of values use enum",
           "server design guide anti-pattern 3"),
        _r("LINT.nested-object", "LINT", L,
           "Parameters are flat primitives, not nested objects",
           "server design guide anti-pattern 2"),
        _r("LINT.costly-pattern", "LINT", L,
           "No pattern repeats a Unicode class a bounded number of times (an automaton of "
           "about 0.1 MB per repetition in pydantic-core)", "issue #28: the pattern trap"),
        _r("LINT.output-schema", "LINT", L, "Every tool declares outputSchema",
           "server design guide anti-pattern 10"),
        _r("LINT.annotations", "LINT", L,
           "Every tool sets annotations (at least readOnlyHint)",
           "server design guide: annotations"),
        _r("LINT.annotations-contradictory", "LINT", L,
           "A read-only tool is not also marked destructive", "server design guide: annotations"),
        _r("LINT.instructions", "LINT", L, "The server sends instructions for the model",
           "server design guide anti-pattern 11"),
        _r("LINT.sibling-parameters", "LINT", L,
           "A parameter shared by several tools has one type, enum and description",
           "server design guide anti-pattern 8"),
        _r("LINT.response-size", "LINT", L,
           "Tool result text stays under ~20,000 characters", "server design guide anti-pattern 6"),
        _r("LINT.tool-count", "LINT", L, "At most 15 tools", "server design guide: 5-15 tools"),
        _r("LINT.actionable-errors", "LINT", L,
           "Error messages say what went wrong and what to do instead",
           "server design guide anti-pattern 4"),
        _r("LINT.error-structured-content", "LINT", L,
           "Tool execution errors carry no structuredContent",
           "server design guide anti-pattern 14"),
        _r("LINT.static-descriptions", "LINT", L,
           "Descriptions and instructions hold no dynamic data (dates, times)",
           "server design guide anti-pattern 15"),
        # ---- security lint (is this server safe to give an assistant?); the level is
        # the severity: MUST = an attack or a leak, SHOULD = attack surface
        _r("SEC.model-directives", "MUST", X,
           "Definitions hold no hidden directives to the model (tool poisoning)",
           "spec Tools §Security (descriptions are untrusted); Invariant Labs tool-poisoning "
           "advisory (2025-04)"),
        _r("SEC.sensitive-files", "MUST", X,
           "Definitions do not ask the model for credential or home-directory files",
           "Invariant Labs tool-poisoning advisory (2025-04); OWASP LLM01 prompt injection"),
        _r("SEC.conversation-exfiltration", "MUST", X,
           "Definitions do not ask for the conversation, its history or the system prompt",
           "OWASP LLM02 sensitive information disclosure; spec security best practices"),
        _r("SEC.invisible-characters", "MUST", X,
           "No invisible, bidirectional or tag characters in definitions",
           "Unicode TR36 §2 (bidi and invisible spoofing); CVE-2021-42574 (Trojan Source)"),
        _r("SEC.homoglyphs", "SHOULD", X,
           "No words mixing Latin with look-alike Cyrillic or Greek letters",
           "Unicode TR39 (confusables, mixed-script detection)"),
        _r("SEC.secrets", "MUST", X,
           "No private keys or API keys in definitions or results",
           "OWASP LLM02 sensitive information disclosure; CWE-798"),
        _r("SEC.unconstrained-input", "SHOULD", X,
           "Command, file-path and URL parameters are constrained (enum or pattern)",
           "spec security best practices (SSRF); CWE-78, CWE-22, CWE-918"),
        _r("SEC.silent-change", "SHOULD", X,
           "Tool definitions do not change within a session without list_changed",
           "R25-11 Tools §List Changed Notification; Invariant Labs rug-pull advisory"),
        _r("PIN.definitions", "SHOULD", X,
           "Tool, prompt and template definitions match the pin (--pin FILE)",
           "Invariant Labs rug-pull advisory (2025-04); spec Tools §Security"),
        # ---- a host configuration's servers together (mcpkit check --config)
        _r("CONFIG.entry", "MUST", SECTION_HOSTS,
           "Every server entry names a command or URL and can be checked in time",
           "host configuration formats (mcpServers / servers)"),
        _r("CROSS.shadowing", "SHOULD", SECTION_HOSTS,
           "No tool name is offered by two servers of one configuration",
           "Invariant Labs cross-server tool shadowing advisory (2025-04); spec Tools "
           "§Security (hosts disambiguate tools)"),
        _r("CROSS.reference", "MUST", SECTION_HOSTS,
           "No description refers to another server's tools",
           "Invariant Labs cross-server tool shadowing advisory (2025-04)"),
        _r("SEC.open-http", "MUST", X,
           "An HTTP server beyond loopback requires authorization",
           "spec Transports §Security Warning (bind to localhost, authenticate); "
           "spec Authorization"),
    )
}


@functools.cache
def _matrix_index() -> dict[str, MatrixRow]:
    return {row.id: row for row in matrix()}


def finding(
    rule: str, verdict: Verdict, message: str, evidence: str = "", era: Era | None = None
) -> Finding:
    """A :class:`Finding` for ``rule`` (a matrix id or a catalogue id), with the level,
    section, title and spec reference filled in from the catalogue."""
    if rule in RULES:
        r = RULES[rule]
        return Finding(rule, r.level, verdict, message, trim(evidence), r.section, r.title, era,
                       r.spec)
    row = _matrix_index()[rule]
    return Finding(rule, row.level, verdict, message, trim(evidence), SECTION_MATRIX,
                   row.requirement, era, row.section)
