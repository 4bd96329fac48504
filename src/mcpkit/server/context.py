"""The request context a handler receives: who asked, in which revision, and a way back.

``Context`` is the same object whichever era a request came from; ``stateless`` tells
them apart. On a stateful session its server->client calls (``sample``, ``elicit``,
``list_roots``) are requests on the session; for a stateless (2026-07-28) request they are
MRTR input requests: the handler ends with ``InputRequired`` and runs again when the client
retries with the answers. Either way each call checks the client's declared capabilities
first and refuses rather than send what the client cannot take:
``CapabilityNotSupported`` on a session, ``MissingClientCapability`` (-32021) when
stateless.

``auth`` is the verified access token the request came with (a
``mcpkit.auth.AccessToken``: subject, client id, scopes, claims) when the server is
served over HTTP with ``auth=``; None on stdio and on an unprotected endpoint.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, overload

import anyio

from ..protocol.errors import (
    CapabilityNotSupported,
    InternalError,
    MissingClientCapability,
)
from ..protocol.events import RequestReceived
from ..protocol.jsonrpc import JSONObject, RequestId
from ..protocol.methods import has_capability
from ..protocol.record import Record
from ..protocol.stateless import MRTR_METHODS, RequestMeta
from ..protocol.versions import Revision
from ..session import Session
from .mrtr import InputRequired, check_answer
from .visibility import Rule, make_rule, revise_session

if TYPE_CHECKING:
    from ..auth.server.access_token import AccessToken
    from .app import Server
    from .task_runs import TaskRun

T = TypeVar("T")
_UNSET: Any = object()  # (an argument not given: None means something to elicit)
LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class ElicitResult(Record, Generic[T]):
    """The user's answer: ``action`` is accept, decline or cancel; ``content`` (the raw
    form values) and ``data`` (the same as the type the form was asked with, or the
    content itself for a JSON schema) on accept, else None."""

    __slots__ = ("action", "content", "data")

    def __init__(
        self,
        action: Literal["accept", "decline", "cancel"],
        content: dict[str, Any] | None = None,
        data: T | None = None,
    ) -> None:
        self.action = action
        self.content = content
        self.data = data

    @property
    def accepted(self) -> bool:
        """Whether the user accepted (and ``data`` holds the answer)."""
        return self.action == "accept"


class Context:
    """Per-request context: revision, client info/capabilities, progress, logging, and
    server->client requests.

    The ``key`` of ``sample``, ``elicit``, ``elicit_url`` and ``list_roots`` names the
    input in a stateless request's ``inputRequests`` (default: ``<kind>-<n>``, ``n``
    counting the inputs asked so far); a handler that asks only sometimes should name its
    inputs, so a retry finds each answer under the same name.
    """

    __slots__ = ("_answers", "_asked", "_request", "_session", "_starter", "auth", "meta",
                 "method", "request_id", "server", "stateless", "task")

    def __init__(
        self,
        server: Server,
        session: Session,
        request: RequestReceived | None,
        answers: dict[str, Any] | None = None,
        method: str = "",
    ) -> None:
        self.server = server
        self._session = session
        #: The request being served, with the facts decided once when it arrived (its
        #: revision, the client's capabilities and info, who sent it); None when the
        #: context serves no request (``on_roots_changed``: ``method`` names the
        #: notification).
        self._request = request
        self.request_id: RequestId | None = None
        self.method = method
        self.meta: JSONObject = {}
        #: A stateless (2026-07-28) request's own ``_meta`` (its revision, the client's
        #: capabilities, info and log level); None for a request on a stateful session.
        self.stateless: RequestMeta | None = None
        #: The request's verified access token (subject, client id, scopes, claims): over
        #: HTTP with ``auth=``, the token this very request carried (in a session, each
        #: request's own; all of one subject). None on stdio or without ``auth=``.
        self.auth: AccessToken | None = None
        if request is not None:
            self.request_id = request.id
            self.method = request.method
            meta = request.params.get("_meta")
            self.meta = meta if isinstance(meta, dict) else {}
            self.stateless = request.stateless
            self.auth = cast("AccessToken | None", request.origin.principal)
        self._answers = answers or {}  # MRTR: inputs the client already provided
        self._asked = 0
        #: The task this request runs as (None: a plain request). Its handler's progress,
        #: logs and requests to the client then go the task's way (``task_runs.py``).
        self.task: TaskRun | None = None
        self._starter: Callable[[Context], Awaitable[None]] | None = None

    # ------------------------------------------------------------------ who is asking

    @property
    def modern(self) -> RequestMeta | None:
        """Deprecated: the former name of ``stateless``, kept as a read-only alias; use
        ``stateless``."""
        return self.stateless

    @property
    def revision(self) -> Revision:
        """The protocol revision of this request."""
        request = self._request
        rev = request.revision if request is not None else self._session.revision
        assert rev is not None
        return rev

    @property
    def protocol_version(self) -> str:
        return self.revision.version

    @property
    def client_capabilities(self) -> JSONObject:
        request = self._request
        if request is not None:
            return request.peer_capabilities
        return self._session.peer_capabilities

    @property
    def client_info(self) -> JSONObject:
        request = self._request
        if request is not None:
            return request.peer_info
        return self._session.peer_info

    @property
    def progress_token(self) -> str | int | None:
        request = self._request
        return None if request is None else request.progress_token

    @property
    def log_level(self) -> str | None:
        """The level the client set with ``logging/setLevel`` or, in 2026-07-28, this
        request's ``_meta`` log level (None: not set)."""
        if self.stateless is not None:
            return self.stateless.log_level
        return self._session.log_level

    @property
    def session_state(self) -> dict[str, Any]:
        """A dict that lives as long as this client's session; it is the application's
        alone (mcpkit keeps none of its own bookkeeping there)."""
        return self._session.state

    async def enable_components(self, *, names: Iterable[str] | None = None,
                                tags: Iterable[str] | None = None,
                                kinds: Iterable[str] | None = None, only: bool = False) -> None:
        """Show this session the components that match (all of the criteria given), over
        the server's own rules; ``only``: and hide the rest of those kinds. The session is
        sent ``list_changed`` (``server/visibility.py``). Not on a 2026-07-28 stateless
        request: it has no session (use ``Server.enable``)."""
        self._revise(make_rule(True, names, tags, kinds, only))

    async def disable_components(self, *, names: Iterable[str] | None = None,
                                 tags: Iterable[str] | None = None,
                                 kinds: Iterable[str] | None = None) -> None:
        """Hide from this session the components that match (see ``enable_components``)."""
        self._revise(make_rule(False, names, tags, kinds, False))

    async def reset_visibility(self) -> None:
        """Drop this session's own rules: it sees what the server's rules show."""
        self._revise(None)

    def _revise(self, rule: Rule | None) -> None:
        if self.stateless is not None:
            raise RuntimeError("a 2026-07-28 stateless request has no session to show or "
                               "hide components for; use Server.enable/disable, or check "
                               "ctx.auth in the handler")
        revise_session(self._session, rule)

    @property
    def lifespan(self) -> Any:
        """What the server's lifespan context manager yielded (None without one)."""
        return self.server.lifespan_state

    # ------------------------------------------------------------------ progress, logging

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send progress if the client asked for it; non-increasing values are dropped.
        Returns once the way to the client has room (a client that reads slower than
        the handler reports paces it; see docs/server.md)."""
        if self.task is not None:
            await self.task.progress(progress, total, message)
            return
        if self.request_id is None or not self._session.progress(
                self.request_id, progress, total, message):
            return
        waiting = self._session.congested(self.request_id)
        if waiting is not None:
            await waiting

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message to the client if ``level`` passes the one it asked for
        (``logging/setLevel`` on a session; a stateless request's ``_meta`` log level,
        and nothing when it names none).

        Never put secrets, credentials or personal data in ``data``. Paced like
        ``report_progress``.
        """
        if self.task is not None:
            waiting = self.task.log(level, data, logger)
        elif self._session.log(level, data, logger, self.request_id):
            waiting = self._session.congested(self.request_id)
        else:
            return
        if waiting is not None:
            await waiting

    async def debug(self, data: Any, logger: str | None = None) -> None:
        await self.log("debug", data, logger)

    async def info(self, data: Any, logger: str | None = None) -> None:
        await self.log("info", data, logger)

    async def warning(self, data: Any, logger: str | None = None) -> None:
        await self.log("warning", data, logger)

    async def error(self, data: Any, logger: str | None = None) -> None:
        await self.log("error", data, logger)

    # ------------------------------------------------------------------ tasks

    async def start_task(self) -> bool:
        """Go on as a task from here (a tool registered with ``task_start="explicit"``):
        the request is answered with the task, and the rest of the handler runs as it.
        Input asked for before this point was asked the plain way (2026-07-28: by
        ``input_required`` and a retry). False when this call does not run as a task (a
        client that cannot take one, a tool that is not a task tool); True when it does
        (also when it already did)."""
        starter = self._starter
        if starter is None:
            return self.task is not None
        self._starter = None
        await starter(self)
        return True

    # ------------------------------------------------------------------ server -> client

    def _require(self, path: str, what: str) -> None:
        if not has_capability(self.client_capabilities, path):
            self._missing(path, f"the client did not declare the '{path}' capability, so it "
                                f"cannot {what}")

    def _missing(self, path: str, message: str) -> None:
        if self.stateless is not None:  # 2026-07-28: a protocol error naming what is missing
            top, _, rest = path.partition(".")
            needed: JSONObject = {top: {rest: {}} if rest else {}}
            raise MissingClientCapability(
                f"Missing required client capability: {message}. Declare it in "
                "_meta clientCapabilities and retry.",
                {"requiredCapabilities": needed},
            )
        raise CapabilityNotSupported(message)

    def require_capability(self, path: str) -> None:
        """Fail unless the client declared ``path`` (e.g. ``"sampling"``): -32021 in
        2026-07-28, ``CapabilityNotSupported`` (an ``isError`` result) before."""
        self._require(path, f"use '{path}'")

    async def _ask(self, method: str, params: JSONObject | None, timeout: float | None,
                   key: str | None = None) -> JSONObject:
        """A server->client request: on the session (stateful), or an MRTR input request
        (stateless: the handler is re-run when the client retries with the answer), or
        the task's input request when running as a task."""
        if self.task is not None:
            return await self.task.ask(method, params, timeout, key)
        if self.stateless is None:
            return await self._session.request(method, params, timeout=timeout,
                                               related=self.request_id)
        answers = await self.request_inputs(
            {key or self._next_key(method): (method, params)}, timeout=timeout)
        return answers.popitem()[1]

    def _next_key(self, method: str) -> str:
        self._asked += 1
        return f"{method.split('/')[0]}-{self._asked}"

    async def request_inputs(
        self,
        requests: dict[str, tuple[str, JSONObject | None]],
        *,
        timeout: float | None = 600.0,
    ) -> dict[str, JSONObject]:
        """Ask the client for several inputs at once: ``{key: (method, params)}`` with
        ``method`` one of ``elicitation/create``, ``sampling/createMessage``,
        ``roots/list``. Returns ``{key: result}``.

        In 2026-07-28 this is one ``InputRequiredResult`` listing every missing input (the
        handler runs again when the client retries with the answers); before, the
        requests are sent to the client one after another. As a task, they are asked
        all at once (2026-07-28: all pending in ``inputRequests`` together).
        """
        task = self.task
        if task is not None:
            results: dict[str, JSONObject] = {}

            async def one(key: str, method: str, params: JSONObject | None) -> None:
                results[key] = await task.ask(method, params, timeout, key)

            async with anyio.create_task_group() as tg:
                for key, (method, params) in requests.items():
                    tg.start_soon(one, key, method, params)
            return {key: results[key] for key in requests}
        if self.stateless is None:
            return {key: await self._session.request(method, params, timeout=timeout,
                                                     related=self.request_id)
                    for key, (method, params) in requests.items()}
        if self.method not in MRTR_METHODS:
            raise InternalError(
                f"a '{self.method}' request cannot ask the client for input (only tools/call, "
                "prompts/get and resources/read can)"
            )
        answers: dict[str, JSONObject] = {}
        missing: dict[str, JSONObject] = {}
        for key, (method, params) in requests.items():
            answer = self._answers.get(key)
            if isinstance(answer, dict):
                check_answer(key, method, answer)
                answers[key] = answer
            else:
                missing[key] = {"method": method, "params": params if params is not None
                                else {}}
        if missing:
            raise InputRequired(missing)
        return answers

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
        key: str | None = None,
    ) -> JSONObject:
        """Ask the client's LLM for a completion (``sampling/createMessage``).

        ``messages`` is a prompt string or a list of ``SamplingMessage`` dicts. With
        ``tools``, the client must have declared ``sampling.tools``; the messages must keep
        the pairing rules (a user message with ``tool_result`` holds only tool results, and
        every ``tool_use`` is answered in the next user message). Returns the
        ``CreateMessageResult``. On a session it raises ``CapabilityNotSupported``,
        ``RemoteError`` (e.g. the user rejected it), ``RequestTimeout``,
        ``ConnectionClosed``; a stateless request lacking the capability gets
        ``MissingClientCapability``.
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
        return await self._ask("sampling/createMessage", params, timeout, key)

    @overload
    async def elicit(self, message: str, schema: type[T], *, timeout: float | None = 600.0,
                     key: str | None = None) -> ElicitResult[T]: ...

    @overload
    async def elicit(self, message: str, *, response_type: type[T],
                     response_title: str | None = None,
                     response_description: str | None = None,
                     timeout: float | None = 600.0, key: str | None = None
                     ) -> ElicitResult[T]: ...

    @overload
    async def elicit(self, message: str, schema: JSONObject | Any = ..., *,
                     response_type: Any = ..., response_title: str | None = None,
                     response_description: str | None = None,
                     timeout: float | None = 600.0, key: str | None = None
                     ) -> ElicitResult[Any]: ...

    async def elicit(
        self,
        message: str,
        schema: JSONObject | Any = _UNSET,
        *,
        response_type: Any = _UNSET,
        response_title: str | None = None,
        response_description: str | None = None,
        timeout: float | None = 600.0,
        key: str | None = None,
    ) -> ElicitResult[Any]:
        """Ask the user for structured input (form mode).

        ``schema`` is a flat ``requestedSchema`` (a dict; ``data`` is then the content),
        or a type the form is built from and the answer returned as (``data``): a
        pydantic model, dataclass or TypedDict of primitive fields, or a lone ``bool``,
        ``str``, ``int``, ``float``, string ``Literal``/``Enum`` or list of those
        (``server/elicit_forms.py``). An accepted answer that does not fit raises
        ``ToolError``. Never ask for passwords, API keys or other secrets this way: use
        ``elicit_url``.

        ``response_type=`` is FastMCP's spelling, accepted as FastMCP reads it (a port
        keeps its handlers): a type as above, ``None`` for a plain confirmation
        (``data`` is ``{}``), ``["low", "high"]`` for one choice, ``[["a", "b"]]`` for
        several, ``{"low": {"title": "Low"}}`` for titled choices (``[{...}]``: several);
        ``response_title``/``response_description`` label the one field of such a form.
        """
        if response_type is not _UNSET:
            if schema is not _UNSET:
                raise TypeError("elicit() takes what to ask for once: a type or schema as "
                                "the second argument, or response_type=, not both")
            from .elicit_forms import shorthand_form

            form: Any = shorthand_form(response_type, response_title, response_description)
            schema = form.schema
        elif schema is _UNSET:
            raise TypeError("elicit() needs what to ask for: a type (ctx.elicit(msg, bool)), "
                            "a requestedSchema dict, or response_type=...")
        elif response_title is not None or response_description is not None:
            raise TypeError("response_title/response_description go with response_type=")
        else:
            form = None
            if not isinstance(schema, dict):  # a type: its form (pydantic) made on first use
                from .elicit_forms import form_for

                form = form_for(schema)
                schema = form.schema
        caps = self.client_capabilities.get("elicitation")
        if not isinstance(caps, dict):
            self._missing("elicitation", "the client did not declare the 'elicitation' "
                                         "capability, so it cannot elicit")
        elif caps and "form" not in caps:
            self._missing("elicitation.form", "the client supports only URL-mode elicitation")
        rev = self.revision
        if rev.has("elicitation") and not rev.has("elicitation_choices"):
            # Before 2025-11-25 (SEP-1330) a field is a primitive or a string enum: a
            # multi-select (type: array) has no spelling there, and titled choices are an
            # enum with enumNames.
            if form is not None:
                from .elicit_forms import before_choices

                schema = before_choices(schema)
            props = schema.get("properties")
            for name, prop in (props if isinstance(props, dict) else {}).items():
                if isinstance(prop, dict) and prop.get("type") == "array":
                    raise CapabilityNotSupported(
                        f"elicitation field {name!r} is a multi-select (type: array), which "
                        f"protocol revision {rev.version} cannot express (it needs 2025-11-25)"
                    )
        params: JSONObject = {"message": message, "requestedSchema": schema}
        if self.revision.has("elicitation_url") or self.stateless is not None:
            params = {"mode": "form", **params}
        res = await self._ask("elicitation/create", params, timeout, key)
        answer = _elicit_result(res)
        if answer.action == "accept":
            answer.data = answer.content if form is None else form.parse(answer.content)
        return answer

    async def elicit_url(
        self, message: str, url: str, elicitation_id: str, *, timeout: float | None = 600.0,
        key: str | None = None,
    ) -> ElicitResult[Any]:
        """Send the user to ``url`` (URL mode), e.g. for credentials or payment.

        ``accept`` only means the user agreed to open the link, not that the flow is done.
        """
        caps = self.client_capabilities.get("elicitation")
        stateless = self.stateless is not None
        if not (stateless or self.revision.has("elicitation_url")) or not isinstance(
            caps, dict
        ) or "url" not in caps:
            self._missing("elicitation.url", "the client did not declare URL-mode elicitation")
        params = {"mode": "url", "message": message, "url": url}
        if not stateless:  # elicitationId (and elicitation/complete) are gone in 2026-07-28
            params["elicitationId"] = elicitation_id
        res = await self._ask("elicitation/create", params, timeout, key)
        return _elicit_result(res)

    async def list_roots(self, *, timeout: float | None = 60.0, key: str | None = None
                         ) -> list[JSONObject]:
        """The client's roots (``roots/list``)."""
        self._require("roots", "list roots")
        res = await self._ask("roots/list", None, timeout, key)
        roots = res.get("roots")
        return roots if isinstance(roots, list) else []


def _elicit_result(res: JSONObject) -> ElicitResult[Any]:
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
