"""The stateless revision (2026-07-28): per-request ``_meta``, result stamping, MRTR state.

A request is *stateless* when ``params._meta`` names ``io.modelcontextprotocol/protocolVersion``;
it is then served on its own terms, whatever else happened on the connection. This module
checks such a request's metadata, stamps results (``resultType``, ``serverInfo``,
caching hints), and seals/opens ``requestState`` with an HMAC so a client can carry a
multi-round-trip request's progress without being able to forge it.
"""

from __future__ import annotations

import base64
import time
from typing import Any, Final

import orjson

from .errors import InvalidParams, UnsupportedProtocolVersion
from .methods import LOG_LEVEL_RANK
from .versions import REVISIONS, STATELESS_VERSIONS, Revision

PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"

CACHEABLE: Final = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
MRTR_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})


class RequestMeta:
    """What a stateless request says about itself (read once per request; not changed
    after). A slotted class, not a dataclass: cheaper to define at start-up and to
    build per request."""

    __slots__ = ("client_capabilities", "client_info", "log_level", "revision")

    def __init__(self, revision: Revision, client_capabilities: dict[str, Any],
                 client_info: dict[str, Any], log_level: str | None) -> None:
        self.revision = revision
        self.client_capabilities = client_capabilities
        self.client_info = client_info
        self.log_level = log_level

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RequestMeta) and (
            self.revision, self.client_capabilities, self.client_info, self.log_level) == (
            other.revision, other.client_capabilities, other.client_info, other.log_level)

    __hash__ = None  # type: ignore[assignment]  # (holds dicts)

    def __repr__(self) -> str:
        return (f"RequestMeta({self.revision.version!r}, client_info={self.client_info!r}, "
                f"log_level={self.log_level!r})")


def is_stateless_request(params: Any) -> bool:
    """Whether a request's params mark it as a 2026-07-28 request (its ``_meta`` names the
    protocol version); such a request is served on its own terms, with no handshake."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION in meta


def read_meta(params: dict[str, Any],
              supported: tuple[str, ...] | None = STATELESS_VERSIONS) -> RequestMeta | None:
    """Check a stateless request's ``_meta``: -32602 for missing or malformed fields, then
    -32022 for a version we do not serve (with the supported list). With ``supported``
    None only the fields are checked (and None is returned)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise InvalidParams(
            "Invalid params: this request has neither a session (Mcp-Session-Id from "
            f"'initialize') nor 2026-07-28 metadata: send params._meta with "
            f"'{PROTOCOL_VERSION}' and '{CLIENT_CAPABILITIES}', or start a session with "
            "'initialize'."
        )
    version = meta.get(PROTOCOL_VERSION)
    if not isinstance(version, str):
        raise InvalidParams(
            f"Invalid params: _meta['{PROTOCOL_VERSION}'] must be a protocol version string."
        )
    caps = meta.get(CLIENT_CAPABILITIES)
    if not isinstance(caps, dict):
        raise InvalidParams(
            f"Invalid params: _meta['{CLIENT_CAPABILITIES}'] (an object, may be empty) is "
            "required on every request of this revision."
        )
    level = meta.get(LOG_LEVEL)
    if level is not None and (not isinstance(level, str) or level not in LOG_LEVEL_RANK):
        raise InvalidParams(f"Invalid params: unknown _meta['{LOG_LEVEL}'] {level!r}.")
    if supported is None:
        return None
    if version not in supported:
        raise UnsupportedProtocolVersion(
            f"Unsupported protocol version {version[:40]!r}; this server supports "
            f"{', '.join(supported)}. Retry with one of them.",
            {"supported": list(supported), "requested": version},
        )
    info = meta.get(CLIENT_INFO)
    return RequestMeta(REVISIONS[version], caps, info if isinstance(info, dict) else {}, level)


def stamp(method: str, result: dict[str, Any], rev: Revision, server_info: dict[str, Any],
          ttl_ms: int, cache_scope: str) -> dict[str, Any]:
    """A result of the stateless revision ``rev``: ``resultType`` (kept if set; feature
    ``result_type``), ``serverInfo`` in ``_meta``, and the caching hints on complete
    results of cacheable methods (feature ``caching``)."""
    out = dict(result)
    if rev.has("result_type"):
        out.setdefault("resultType", "complete")
    meta = dict(out.get("_meta") or {})
    meta[SERVER_INFO] = server_info
    out["_meta"] = meta
    if rev.has("caching") and out.get("resultType", "complete") == "complete" and (
        method in CACHEABLE
    ):
        out.setdefault("ttlMs", ttl_ms)
        out.setdefault("cacheScope", cache_scope)
    return out


# ---------------------------------------------------------------------- requestState


def params_digest(method: str, params: dict[str, Any]) -> str:
    """A digest of what identifies a request, without its MRTR/_meta additions."""
    core = {k: v for k, v in params.items() if k not in ("_meta", "inputResponses",
                                                          "requestState")}
    import hashlib  # here, not at import: MRTR is not on the start-up path

    data = orjson.dumps([method, core], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(data).hexdigest()[:32]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def seal_state(key: bytes, method: str, params: dict[str, Any], answers: dict[str, Any],
               ttl_s: float = 600.0, principal: str | None = None) -> str:
    """``requestState`` carrying the answers gathered so far, bound to this request and
    to ``principal`` (the identity of whoever made it; None when requests carry none)."""
    import hashlib
    import hmac

    body = orjson.dumps({"d": params_digest(method, params), "a": answers,
                         "x": int(time.time() + ttl_s), "p": principal})
    mac = hmac.new(key, body, hashlib.sha256).digest()
    return f"{_b64(body)}.{_b64(mac)}"


def open_state(key: bytes, method: str, params: dict[str, Any], state: Any,
               principal: str | None = None) -> dict[str, Any]:
    """The answers sealed in ``state``; ``InvalidParams`` if it was tampered with, expired,
    belongs to another request, or was sealed for another ``principal`` (a replay by
    someone else is refused exactly like a forgery)."""
    import hashlib
    import hmac

    bad = InvalidParams(
        "Invalid params: requestState is not valid for this request (tampered, expired or "
        "from another request); retry the original request without it."
    )
    if not isinstance(state, str) or len(state) > 1_000_000 or "." not in state:
        raise bad
    body_b64, _, mac_b64 = state.partition(".")
    try:
        body, mac = _unb64(body_b64), _unb64(mac_b64)
    except (ValueError, TypeError):
        raise bad from None
    if _b64(body) != body_b64 or _b64(mac) != mac_b64:
        raise bad  # not the exact string we issued (the decoder skips junk and spare bits)
    if not hmac.compare_digest(mac, hmac.new(key, body, hashlib.sha256).digest()):
        raise bad
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise bad from None
    if (not isinstance(data, dict) or data.get("d") != params_digest(method, params)
            or not isinstance(data.get("x"), int) or data["x"] < time.time()
            or not isinstance(data.get("a"), dict) or data.get("p") != principal):
        raise bad
    return dict(data["a"])
