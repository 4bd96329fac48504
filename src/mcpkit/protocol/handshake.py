"""The ``initialize`` exchange of the stateful era: one job of a ``Connection``.

The client offers a version (``start_handshake``) and accepts the server's choice if it
speaks it, then sends ``notifications/initialized``; a client whose transport lost the
server's side of the session starts one again on the same revision (``start_renewal``).
The server checks the request, negotiates (``versions.negotiate``) and answers with its
capabilities shaped for the chosen revision. Which messages each state allows is
``lifecycle``'s table. What the handshake settled can be saved and taken back
(``snapshot`` / ``restore``).

Written as functions over a ``ConnectionState`` (``conn_base``), named ``self`` because
``Connection`` takes up the public ones as its methods; ``inbound`` calls
``on_initialize`` and ``on_initialize_result`` when those messages arrive.
"""

from __future__ import annotations

from typing import Any

from . import compat
from .answers import queue_notification, send_notification
from .conn_base import ConnectionState, answer_error
from .errors import InvalidParams, LocalProtocolError
from .events import Event, HandshakeFailed, Outgoing, SessionStarted
from .jsonrpc import JSONObject, RequestId, encode
from .jsonrpc import result as result_msg
from .lifecycle import Role, State
from .methods import LOG_LEVEL_RANK
from .outbound import queue_request
from .versions import REVISIONS, negotiate


def start_handshake(self: ConnectionState, version: str | None = None) -> RequestId:
    """Client: send ``initialize`` offering ``version`` (default: the newest we speak)."""
    if self.role is not Role.CLIENT:
        raise LocalProtocolError("only a client starts the handshake")
    if not self.lifecycle.may_request("initialize"):
        raise LocalProtocolError(
            f"cannot send 'initialize' in handshake state {self.state.value}"
        )
    return queue_request(self, "initialize", _initialize_params(self, version), None)


def start_renewal(self: ConnectionState) -> RequestId:
    """Client, in a ready session: send ``initialize`` again, offering the revision
    already negotiated, because the transport lost the server's side of the session
    (Streamable HTTP: 404 for an expired ``Mcp-Session-Id``) and starts a new one.

    Other requests may go on meanwhile. The answer is checked like the first one: the
    same revision updates the peer's info, capabilities and instructions, queues
    ``notifications/initialized`` and reports ``SessionStarted``; a refusal, or another
    revision (our requests were written for this one), reports ``HandshakeFailed`` and
    closes the connection. Raises ``LocalProtocolError`` unless this is a client in a
    ready session of a stateful revision."""
    rev = self.revision
    if self.role is not Role.CLIENT or self.state is not State.READY or (
            rev is None or not rev.stateful):
        raise LocalProtocolError(
            f"only a client in a ready stateful session renews it (state "
            f"{self.state.value})"
        )
    return queue_request(self, "initialize", _initialize_params(self, rev.version), None)


def _initialize_params(self: ConnectionState, version: str | None) -> JSONObject:
    return {
        "protocolVersion": version or self._latest,
        "capabilities": self.capabilities,
        "clientInfo": self.info,
    }


def snapshot(self: ConnectionState) -> dict[str, Any]:
    """What the handshake settled, for a session store (see ``restore``)."""
    return {
        "version": self.revision.version if self.revision else None,
        "peer_info": self.peer_info,
        "peer_capabilities": self.peer_capabilities,
        "ready": self.lifecycle.state is State.READY,
        "log_level": self.log_level,
    }


def restore(self: ConnectionState, record: dict[str, Any]) -> None:
    """Take back a session from ``snapshot()`` (e.g. after a server restart).

    Raises ``LocalProtocolError`` (a ``ValueError``) for a record this connection
    cannot resume."""
    version = record.get("version")
    if not isinstance(version, str) or version not in self.versions:
        raise LocalProtocolError(f"cannot restore a session of revision {version!r}")
    self.revision = REVISIONS[version]
    info, caps = record.get("peer_info"), record.get("peer_capabilities")
    self.peer_info = info if isinstance(info, dict) else {}
    self.peer_capabilities = caps if isinstance(caps, dict) else {}
    level = record.get("log_level")
    self.log_level = level if level in LOG_LEVEL_RANK else None
    self.lifecycle.state = State.READY if record.get("ready") else State.INITIALIZING


def on_initialize(self: ConnectionState, rid: RequestId, params: JSONObject,
                  events: list[Event]) -> None:
    """Server: check, negotiate and answer the client's ``initialize`` request ``rid``."""
    version = params.get("protocolVersion")
    caps = params.get("capabilities")
    info = params.get("clientInfo")
    problems = []
    if not isinstance(version, str):
        problems.append("'protocolVersion' (string) is required")
    if not isinstance(caps, dict):
        problems.append("'capabilities' (object) is required")
    if not isinstance(info, dict) or not isinstance(info.get("name"), str):
        problems.append("'clientInfo' with 'name' and 'version' is required")
    if problems:
        answer_error(self, rid, InvalidParams(
            "Invalid params for initialize: " + "; ".join(problems) + "."), None, events)
        return
    assert isinstance(caps, dict) and isinstance(info, dict)
    chosen = negotiate(version, self.versions)
    rev = REVISIONS[chosen]
    self.revision = rev
    self.peer_info = _shared(info)
    self.peer_capabilities = _shared(caps)
    self.lifecycle.advance("recv:initialize")
    res: JSONObject = {
        "protocolVersion": chosen,
        "capabilities": compat.server_capabilities(self.capabilities, rev),
        "serverInfo": compat.implementation(self.info, rev),
    }
    if self.instructions:
        res["instructions"] = self.instructions
    self._outbox.append(Outgoing(encode(result_msg(rid, res)), rid, True))
    events.append(SessionStarted(rev, info, caps, self.instructions))


def on_initialize_result(self: ConnectionState, res: JSONObject, events: list[Event]) -> None:
    """Client: take the server's answer to our ``initialize`` (first, or a renewal)."""
    version = res.get("protocolVersion")
    renewed = self.revision if self.state is State.READY else None  # see start_renewal
    if not isinstance(version, str) or version not in self.versions:
        self.lifecycle.close()
        events.append(
            HandshakeFailed(
                f"the server chose protocol revision {version!r}, which this client does "
                f"not support (supported: {', '.join(self.versions)})"
            )
        )
        return
    if renewed is not None and version != renewed.version:
        self.lifecycle.close()
        events.append(
            HandshakeFailed(
                f"the server started the new session with protocol revision {version}, "
                f"not {renewed.version} as before"
            )
        )
        return
    rev = REVISIONS[version]
    caps = res.get("capabilities")
    info = res.get("serverInfo")
    self.revision = rev
    self.peer_capabilities = caps if isinstance(caps, dict) else {}
    self.peer_info = info if isinstance(info, dict) else {}
    instructions = res.get("instructions")
    if isinstance(instructions, str):
        self.peer_instructions = instructions
    if renewed is None:
        send_notification(self, "notifications/initialized")
    else:  # the handshake state stays READY: the lifecycle has nothing to advance
        queue_notification(self, "notifications/initialized", None)
    events.append(
        SessionStarted(
            rev,
            self.peer_info,
            self.peer_capabilities,
            instructions if isinstance(instructions, str) else None,
        )
    )


_SHARED: dict[bytes, JSONObject] = {}


def _shared(value: JSONObject) -> JSONObject:
    """One shared copy of identical client info/capabilities across sessions (a server
    holding thousands of sessions from the same client keeps one dict, not thousands).
    The values are treated as read-only."""
    try:
        key = encode(value)
    except TypeError:  # e.g. an integer past 64 bits, from a decoder other than orjson
        return value
    if len(key) > 4096:
        return value
    found = _SHARED.get(key)
    if found is None:
        if len(_SHARED) >= 1024:
            _SHARED.clear()
        _SHARED[key] = found = value
    return found

