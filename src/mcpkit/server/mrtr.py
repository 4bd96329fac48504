"""Multi round-trip requests (MRTR, 2026-07-28): how a stateless request asks the client for
input and picks up where it left off.

A stateless handler that needs what the client has not given yet (``ctx.elicit``,
``ctx.sample``, ``ctx.list_roots``, ``ctx.request_inputs``) ends with ``InputRequired``.
The server answers ``resultType: "input_required"`` with the input requests and a
``requestState``: the answers so far, sealed with an HMAC over the method and params, so a
client can carry it but neither forge it nor reuse it for another request; over a
protected HTTP endpoint it is also sealed with the identity of the token's subject, so
another subject's retry with it is refused exactly like a forged one. The client
retries with the same params, its new ``inputResponses`` and that ``requestState``; the
handler runs again from the start and finds every answer in its ``Context``; an answer
that cannot be the result of what was asked is ``InvalidParams``.

The sealing key is the one given (``Server(state_key=...)``), else the secret of the
session store every instance of a deployment shares (so any instance opens what another
sealed), else a random one made on first use.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..protocol.connection import RequestReceived
from ..protocol.errors import InvalidParams
from ..protocol.jsonrpc import JSONObject
from ..protocol.nesting import TOO_DEEP, too_deep
from ..protocol.stateless import open_state, seal_state
from ..session import HandlerResult, Principal, Ready

log = logging.getLogger("mcpkit.server")

if TYPE_CHECKING:
    from ..storage.sessions import SessionStore, SharedSecret
    from .context import Context

class InputRequired(Exception):
    """Raised inside a stateless handler that needs client input it does not have yet;
    the server answers with an ``InputRequiredResult`` and re-runs the handler on retry."""

    def __init__(self, requests: dict[str, JSONObject]) -> None:
        super().__init__(", ".join(requests))
        self.requests = requests


_ANSWER_SHAPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "elicitation/create": ("ElicitResult", ("action",)),
    "sampling/createMessage": ("CreateMessageResult", ("role", "content", "model")),
    "roots/list": ("ListRootsResult", ("roots",)),
}


def check_answer(key: str, method: str, answer: JSONObject) -> None:
    """Refuse an input response that cannot be the result of what was asked
    (R26-07.MRTR.8: malformed ``inputResponses`` get a JSON-RPC error)."""
    name, fields = _ANSWER_SHAPES.get(method, ("result", ()))
    missing = [f for f in fields if f not in answer]
    bad_action = method == "elicitation/create" and answer.get("action") not in (
        "accept", "decline", "cancel")
    bad_roots = method == "roots/list" and not isinstance(answer.get("roots"), list)
    if missing or (bad_action and "action" not in missing) or (bad_roots and not missing):
        raise InvalidParams(
            f"Invalid params: inputResponses[{key!r}] answers {method} and must be an {name}"
            + (f" with {', '.join(missing)}" if missing else "")
            + (" ('action' is accept, decline or cancel)" if bad_action else "")
            + (" ('roots' is a list)" if bad_roots and not missing else "") + ".")


def check_depth(key: str, answer: Any) -> None:
    """Refuse an input response nested past ``MAX_DEPTH`` (it would be sealed into a
    ``requestState``, relayed or validated: see ``protocol.nesting``)."""
    if too_deep(answer):
        raise InvalidParams(f"Invalid params: inputResponses[{key!r}] is {TOO_DEEP}.")


class StateSeal:
    """Seals and opens ``requestState`` (see the module docstring)."""

    def __init__(self, key: bytes | None) -> None:
        self._key = key
        self._given = key is not None  # a key given by the user wins over a store's
        self._store: SharedSecret | None = None  # whose secret to read when first needed

    @property
    def key(self) -> bytes:
        """The HMAC key (a random one is made on first use when none was set). A shared
        store that could not be read when the app was built is read now (its
        ``StoreUnavailable`` propagates: a random key would not open other instances'
        states)."""
        if self._key is None:
            if self._store is not None:
                self._key = self._store.secret()
            else:
                import secrets

                self._key = secrets.token_bytes(32)
        return self._key

    @key.setter
    def key(self, key: bytes) -> None:
        self._key = key

    def for_store(self, store: SessionStore | None) -> StateSeal:
        """The seal of an app whose sessions ``store`` keeps: a seal of its own on the
        store's secret when the store keeps one (a ``SharedSecret``: instances sharing it
        then share the key) and no key was given; else this one. This one is left as it
        is."""
        from ..storage.faults import StoreUnavailable
        from ..storage.sessions import SharedSecret

        if self._given or not isinstance(store, SharedSecret):
            return self
        seal = StateSeal(None)
        seal._store = store
        try:
            seal._key = store.secret()
        except StoreUnavailable as exc:  # read when first needed: the app still starts
            log.warning("the shared requestState key could not be read yet: %s", exc)
        return seal

    def answers(self, event: RequestReceived, principal: Principal | None) -> dict[str, Any]:
        """The inputs a retried request brings: its opened ``requestState`` (forged,
        moved, or sealed for another identity than ``principal``'s: ``InvalidParams``)
        plus its ``inputResponses``, each checked to be an object."""
        params = event.params
        answers: dict[str, Any] = {}
        if "requestState" in params:
            answers = open_state(self.key, event.method, params, params["requestState"],
                                 None if principal is None else principal.identity)
        responses = params.get("inputResponses")
        if responses is not None:
            if not isinstance(responses, dict):
                raise InvalidParams("Invalid params: 'inputResponses' must be an object "
                                    "mapping each input key to its result.")
            for key, value in responses.items():
                if not isinstance(value, dict):
                    raise InvalidParams(
                        f"Invalid params: inputResponses[{key!r}] must be a result object "
                        "(an ElicitResult, CreateMessageResult or ListRootsResult), got "
                        f"{type(value).__name__}.")
                check_depth(key, value)
            answers.update(responses)
        return answers

    def run(self, event: RequestReceived, ctx: Context, work: HandlerResult
            ) -> HandlerResult:
        """``work`` as the request's handler: as is on a stateful session, or when it is
        ``Ready`` (its answer is there: a handler that could not wait could not ask for
        input either, and it stays the awaitable the session answers inline); for a
        stateless request, with ``InputRequired`` turned into the ``input_required``
        answer."""
        if event.stateless is None or type(work) is Ready:
            return work
        return self._ask_or_answer(event, ctx, work)

    async def _ask_or_answer(self, event: RequestReceived, ctx: Context,
                             work: HandlerResult) -> JSONObject:
        try:
            return await work
        except InputRequired as need:
            return {
                "resultType": "input_required",
                "inputRequests": need.requests,
                "requestState": seal_state(
                    self.key, event.method, event.params, ctx._answers,
                    principal=None if ctx.auth is None else ctx.auth.identity),
            }
