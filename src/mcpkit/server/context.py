"""The request context a handler receives: who asked, in which revision, and a way back.

``Context`` is the same object whichever era a request came from. In the stateful era
its server->client calls (``sample``, ``elicit``, ``list_roots``) are requests on the
session; each checks the client's declared capabilities first and raises
``CapabilityNotSupported`` rather than send what the client cannot take.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..protocol.errors import CapabilityNotSupported
from ..protocol.jsonrpc import JSONObject, RequestId
from ..protocol.methods import has_capability
from ..protocol.versions import Revision
from ..session import Session

if TYPE_CHECKING:
    from .app import Server

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


@dataclass(slots=True)
class ElicitResult:
    """The user's answer: ``action`` is accept, decline or cancel; ``content`` on accept."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class Context:
    """Per-request context: revision, client info/capabilities, progress, logging, and
    server->client requests."""

    __slots__ = ("_session", "meta", "method", "request_id", "server")

    def __init__(
        self,
        server: Server,
        session: Session,
        request_id: RequestId,
        method: str,
        meta: JSONObject | None,
    ) -> None:
        self.server = server
        self._session = session
        self.request_id = request_id
        self.method = method
        self.meta = meta or {}

    # ------------------------------------------------------------------ who is asking

    @property
    def revision(self) -> Revision:
        """The protocol revision of this request."""
        rev = self._session.conn.revision
        assert rev is not None
        return rev

    @property
    def protocol_version(self) -> str:
        return self.revision.version

    @property
    def client_capabilities(self) -> JSONObject:
        return self._session.conn.peer_capabilities

    @property
    def client_info(self) -> JSONObject:
        return self._session.conn.peer_info

    @property
    def progress_token(self) -> str | int | None:
        return self._session.conn.progress_token(self.request_id)

    @property
    def log_level(self) -> str | None:
        """The level the client set with ``logging/setLevel`` (None: not set)."""
        return self._session.conn.log_level

    @property
    def session_state(self) -> dict[str, Any]:
        """A dict that lives as long as this client's session."""
        return self._session.state

    @property
    def lifespan(self) -> Any:
        """What the server's lifespan context manager yielded (None without one)."""
        return self.server.lifespan_state

    # ------------------------------------------------------------------ progress, logging

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send progress if the client asked for it; non-increasing values are dropped."""
        self._session.progress(self.request_id, progress, total, message)

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message to the client (filtered by its ``logging/setLevel``).

        Never put secrets, credentials or personal data in ``data``.
        """
        self._session.log(level, data, logger, self.request_id)

    async def debug(self, data: Any, logger: str | None = None) -> None:
        await self.log("debug", data, logger)

    async def info(self, data: Any, logger: str | None = None) -> None:
        await self.log("info", data, logger)

    async def warning(self, data: Any, logger: str | None = None) -> None:
        await self.log("warning", data, logger)

    async def error(self, data: Any, logger: str | None = None) -> None:
        await self.log("error", data, logger)

    # ------------------------------------------------------------------ server -> client

    def _require(self, path: str, what: str) -> None:
        if not has_capability(self.client_capabilities, path):
            raise CapabilityNotSupported(
                f"the client did not declare the '{path}' capability, so it cannot {what}"
            )

    async def sample(
        self,
        messages: str | Sequence[JSONObject],
        *,
        max_tokens: int = 1024,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        model_preferences: JSONObject | None = None,
        include_context: Literal["none", "thisServer", "allServers"] | None = None,
        tools: list[JSONObject] | None = None,
        tool_choice: JSONObject | None = None,
        metadata: JSONObject | None = None,
        timeout: float | None = 300.0,
    ) -> JSONObject:
        """Ask the client's LLM for a completion (``sampling/createMessage``).

        ``messages`` is a prompt string or a list of ``SamplingMessage`` dicts. With
        ``tools``, the client must have declared ``sampling.tools``; the messages must keep
        the pairing rules (a user message with ``tool_result`` holds only tool results, and
        every ``tool_use`` is answered in the next user message). Returns the
        ``CreateMessageResult``. Raises ``CapabilityNotSupported``, ``RemoteError`` (e.g. the
        user rejected it), ``RequestTimeout``, ``ConnectionClosed``.
        """
        self._require("sampling", "sample")
        if isinstance(messages, str):
            msgs: list[JSONObject] = [
                {"role": "user", "content": {"type": "text", "text": messages}}
            ]
        else:
            msgs = list(messages)
        params: JSONObject = {"messages": msgs, "maxTokens": max_tokens}
        if tools is not None or tool_choice is not None:
            self._require("sampling.tools", "use tools in sampling")
            check_tool_pairing(msgs)
            if tools is not None:
                params["tools"] = tools
            if tool_choice is not None:
                params["toolChoice"] = tool_choice
        if include_context not in (None, "none"):
            self._require("sampling.context", "include context in sampling")
        if include_context is not None:
            params["includeContext"] = include_context
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        if temperature is not None:
            params["temperature"] = temperature
        if stop_sequences is not None:
            params["stopSequences"] = stop_sequences
        if model_preferences is not None:
            params["modelPreferences"] = model_preferences
        if metadata is not None:
            params["metadata"] = metadata
        return await self._session.request(
            "sampling/createMessage", params, timeout=timeout, related=self.request_id
        )

    async def elicit(
        self,
        message: str,
        schema: JSONObject,
        *,
        timeout: float | None = 600.0,
    ) -> ElicitResult:
        """Ask the user for structured input (form mode) with a flat ``requestedSchema``.

        Never ask for passwords, API keys or other secrets this way: use ``elicit_url``.
        """
        caps = self.client_capabilities.get("elicitation")
        if not isinstance(caps, dict):
            raise CapabilityNotSupported(
                "the client did not declare the 'elicitation' capability, so it cannot elicit"
            )
        if caps and "form" not in caps:
            raise CapabilityNotSupported("the client supports only URL-mode elicitation")
        rev = self.revision
        if rev.has("elicitation") and not rev.has("elicitation_url"):
            # Before 2025-11-25 (SEP-1330 came with URL mode) a field is a primitive or a
            # string enum: a multi-select (type: array) has no spelling there.
            props = schema.get("properties")
            for name, prop in (props if isinstance(props, dict) else {}).items():
                if isinstance(prop, dict) and prop.get("type") == "array":
                    raise CapabilityNotSupported(
                        f"elicitation field {name!r} is a multi-select (type: array), which "
                        f"protocol revision {rev.version} cannot express (it needs 2025-11-25)"
                    )
        params: JSONObject = {"message": message, "requestedSchema": schema}
        if self.revision.has("elicitation_url"):
            params = {"mode": "form", **params}
        res = await self._session.request(
            "elicitation/create", params, timeout=timeout, related=self.request_id
        )
        return _elicit_result(res)

    async def elicit_url(
        self, message: str, url: str, elicitation_id: str, *, timeout: float | None = 600.0
    ) -> ElicitResult:
        """Send the user to ``url`` (URL mode), e.g. for credentials or payment.

        ``accept`` only means the user agreed to open the link, not that the flow is done.
        """
        caps = self.client_capabilities.get("elicitation")
        if not self.revision.has("elicitation_url") or not isinstance(caps, dict) or (
            "url" not in caps
        ):
            raise CapabilityNotSupported("the client did not declare URL-mode elicitation")
        params = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        res = await self._session.request(
            "elicitation/create", params, timeout=timeout, related=self.request_id
        )
        return _elicit_result(res)

    async def list_roots(self, *, timeout: float | None = 60.0) -> list[JSONObject]:
        """The client's roots (``roots/list``)."""
        self._require("roots", "list roots")
        res = await self._session.request("roots/list", None, timeout=timeout,
                                          related=self.request_id)
        roots = res.get("roots")
        return roots if isinstance(roots, list) else []


def _elicit_result(res: JSONObject) -> ElicitResult:
    raw = res.get("action")
    action: Literal["accept", "decline", "cancel"] = (
        raw if raw in ("accept", "decline", "cancel") else "cancel"
    )
    content = res.get("content")
    return ElicitResult(action, content if isinstance(content, dict) else None)


def check_tool_pairing(messages: Sequence[JSONObject]) -> None:
    """Enforce the sampling tool rules; raise ``ValueError`` naming the broken rule."""
    pending: set[str] = set()
    for i, msg in enumerate(messages):
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [content]
        kinds = [b.get("type") for b in blocks if isinstance(b, dict)]
        if "tool_result" in kinds:
            if msg.get("role") != "user" or any(k != "tool_result" for k in kinds):
                raise ValueError(
                    f"messages[{i}]: a message with tool_result must be a user message holding "
                    "only tool_result blocks"
                )
            answered = {b.get("toolUseId") for b in blocks if isinstance(b, dict)}
            if answered != pending:
                raise ValueError(
                    f"messages[{i}]: tool results {sorted(map(str, answered))} do not answer "
                    f"exactly the pending tool uses {sorted(pending)}"
                )
            pending = set()
            continue
        if pending:
            raise ValueError(
                f"messages[{i}]: tool uses {sorted(pending)} must be answered by tool_result "
                "blocks in the next user message"
            )
        if msg.get("role") == "assistant":
            pending = {
                str(b.get("id")) for b in blocks if isinstance(b, dict) and
                b.get("type") == "tool_use"
            }
