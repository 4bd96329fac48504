"""What the provider samplers share: the model choice, the MCP side of content, errors.

A ``sampling/createMessage`` request names no model: it carries ``modelPreferences``
(name hints, then cost / speed / intelligence priorities), and the client picks. The
``Sampler`` base class does that pick, caps ``maxTokens`` when asked, and leaves the
provider's request and answer to its subclass (``anthropic``, ``openai``). The helpers
here read MCP content (one block or a list) and build the ``CreateMessageResult``, and
turn a provider's failure into the JSON-RPC error the server receives: ``InvalidParams``
when the provider refused the request itself (the server can change it), ``InternalError``
otherwise, with ``data`` saying which provider, which HTTP status and whether a retry may
help. Nothing here imports a provider's SDK.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import orjson

from ...protocol.errors import InternalError, InvalidParams, ProtocolError
from ...protocol.jsonrpc import JSONObject

REQUEST_REFUSED = frozenset({400, 413, 422})
"""HTTP statuses by which a provider refuses the request itself (malformed, too long):
the server asked for something the model cannot take, so it hears ``InvalidParams``."""

_STATUS_HINT: dict[int, str] = {
    401: "the client's credentials for it were refused; the server cannot fix this",
    403: "the client's credentials for it were refused; the server cannot fix this",
    404: "the model the client chose is not available there",
    408: "it timed out; retry later",
    409: "it answered a conflict; retry later",
    429: "it is rate limiting the client; retry later",
}
RETRYABLE = frozenset({408, 409, 429})
"""Statuses (besides 5xx) after which the same request may succeed later."""


class Sampler:
    """A ``sampling=`` handler for ``Client`` that asks a provider's model.

    ``default_model``: the model used when no hint matches. ``models``: the other models
    this client lets a server reach: model names (a hint picks the first name that
    contains it, as the specification says hints are read), or a mapping from a name
    (or a part of one) to the model to use (``{"gpt-4o": "claude-sonnet-4-5"}`` maps
    another provider's model to one of this provider's). ``max_tokens``: a ceiling on
    the server's ``maxTokens`` (the server cannot make the client spend more).
    ``options``: more keyword arguments for each provider call (``thinking``,
    ``reasoning_effort``, ``timeout``...). ``client``: the provider SDK's async client;
    by default one made on first use from the environment, which ``aclose`` closes.

    Both SDKs are generated alike (``APIStatusError``, ``APIConnectionError``,
    ``APITimeoutError``, ``to_dict``): ``create`` asks and maps their failures here;
    a subclass sets ``provider`` and says how to import the SDK, make a client, build
    the request (``request``), send it (``send``) and read the answer (``read``).
    """

    provider: ClassVar[str] = ""

    def __init__(self, client: Any = None, *, default_model: str,
                 models: Mapping[str, str] | Sequence[str] = (),
                 max_tokens: int | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        if not default_model:
            raise ValueError("default_model must name a model")
        self.default_model = default_model
        self.models: dict[str, str] = (
            dict(models) if isinstance(models, Mapping) else {m: m for m in models})
        self.max_tokens = max_tokens
        self.options: dict[str, Any] = dict(options or {})
        self.client: Any = client
        self.owns_client = False  # made by this sampler (from the environment): it closes it

    async def aclose(self) -> None:
        """Close the provider client this sampler made itself (a client passed in is
        its owner's to close); the next request makes a new one."""
        if self.owns_client and self.client is not None:
            client, self.client, self.owns_client = self.client, None, False
            await client.close()

    def choose_model(self, preferences: Any) -> str:
        """The model for a request's ``modelPreferences``: the first hint (in the
        server's order) that is part of a known name (case-insensitive), else
        ``default_model``. Override it to weigh ``costPriority``, ``speedPriority`` and
        ``intelligencePriority`` too; they are not used here."""
        hints = preferences.get("hints") if isinstance(preferences, dict) else None
        for hint in hints if isinstance(hints, list) else ():
            name = hint.get("name") if isinstance(hint, dict) else None
            if not isinstance(name, str) or not name:
                continue
            for known, model in self.models.items():
                if name.lower() in known.lower():
                    return model
        return self.default_model

    def token_budget(self, params: JSONObject) -> int:
        """The server's ``maxTokens``, capped by ``max_tokens`` when one was given."""
        asked = params.get("maxTokens")
        if not isinstance(asked, int) or isinstance(asked, bool) or asked < 1:
            raise InvalidParams("Invalid params: 'maxTokens' must be a positive integer.")
        return asked if self.max_tokens is None else min(asked, self.max_tokens)

    async def __call__(self, params: JSONObject) -> JSONObject:
        """Answer one ``sampling/createMessage``: its params in, the result out."""
        return await self.create(params, self.choose_model(params.get("modelPreferences")))

    async def create(self, params: JSONObject, model: str) -> JSONObject:
        """Ask ``model`` at the provider; return the ``CreateMessageResult``. Its
        failures become the errors ``status_error`` and ``unreachable`` say."""
        sdk = self.sdk()
        kwargs = self.request(params, model)
        if self.client is None:
            self.client, self.owns_client = self.new_client(sdk), True
        try:
            answer = await self.send(self.client, kwargs)
        except sdk.APIStatusError as exc:
            raise status_error(self.provider, exc.status_code, exc.body,
                               exc.response.headers.get("retry-after")) from None
        except sdk.APIConnectionError as exc:
            raise unreachable(self.provider, isinstance(exc, sdk.APITimeoutError)) from None
        return self.read(answer.to_dict(mode="json"))

    # what a provider says --------------------------------------------------------------

    def sdk(self) -> Any:
        """The provider's SDK module, imported on the first request."""
        raise NotImplementedError

    def new_client(self, sdk: Any) -> Any:
        """A client of ``sdk`` configured from the environment."""
        raise NotImplementedError

    def request(self, params: JSONObject, model: str) -> JSONObject:
        """The keyword arguments of the provider's call for ``params`` and ``model``."""
        raise NotImplementedError

    async def send(self, client: Any, kwargs: JSONObject) -> Any:
        """Make the provider's call."""
        raise NotImplementedError

    def read(self, answer: JSONObject) -> JSONObject:
        """The ``CreateMessageResult`` from the provider's answer, as JSON."""
        raise NotImplementedError


def blocks(content: Any) -> list[JSONObject]:
    """A message's content as a list of blocks (MCP allows one block or a list)."""
    items = content if isinstance(content, list) else [content]
    if not all(isinstance(b, dict) for b in items):
        raise InvalidParams("Invalid params: message content must be content blocks.")
    return items


def unsupported(provider: str, what: str) -> InvalidParams:
    """The error for content the provider's API cannot take."""
    return InvalidParams(f"Invalid params: this client samples with {provider}, which "
                         f"cannot take {what}; send it as text or leave it out.")


def message_result(content: list[JSONObject], model: str, stop_reason: str | None
                   ) -> JSONObject:
    """The ``CreateMessageResult``: one text block (every revision takes that; text split
    over several blocks is joined, no content at all is an empty text), or, when the
    model asked for tools (2025-11-25 and later), the list of its text and ``tool_use``
    blocks, even of one."""
    body: JSONObject | list[JSONObject] = content
    if not any(b["type"] == "tool_use" for b in content):
        text = "".join(b["text"] for b in content if b["type"] == "text")
        others = [b for b in content if b["type"] != "text"]
        body = others[0] if others and not text else {"type": "text", "text": text}
    result: JSONObject = {"role": "assistant", "model": model, "content": body}
    if stop_reason is not None:
        result["stopReason"] = stop_reason
    return result


def tool_result_text(block: JSONObject, provider: str) -> list[JSONObject]:
    """The content of a ``tool_result`` block as text and image blocks: text kept,
    embedded text resources and resource links written as text, ``structuredContent``
    as its JSON when there is no content."""
    out: list[JSONObject] = []
    for item in blocks(block.get("content") or []):
        kind = item.get("type")
        resource = item.get("resource") if kind == "resource" else None
        if kind in ("text", "image"):
            out.append(item)
        elif kind == "resource_link":
            out.append({"type": "text", "text": f"Resource link: {item.get('uri')}"})
        elif isinstance(resource, dict) and isinstance(resource.get("text"), str):
            out.append({"type": "text", "text": resource["text"]})
        else:
            raise unsupported(provider, f"'{kind}' content in a tool result")
    if not out and isinstance(block.get("structuredContent"), dict):
        out.append({"type": "text",
                    "text": orjson.dumps(block["structuredContent"]).decode()})
    return out


def status_error(provider: str, status: int, body: Any, retry_after: str | None = None
                 ) -> ProtocolError:
    """The error the server receives when ``provider`` answered HTTP ``status``.

    Only a refused request carries the provider's own message (it is about what the
    server sent); other failures get a fixed sentence, never the provider's text."""
    detail = body.get("error", body) if isinstance(body, dict) else None
    kind = detail.get("type") if isinstance(detail, dict) else None
    data: JSONObject = {"provider": provider, "status": status}
    if isinstance(kind, str):
        data["type"] = kind
    retryable = status >= 500 or status in RETRYABLE
    data["retryable"] = retryable
    if retry_after is not None and retry_after.isdigit():
        data["retryAfter"] = int(retry_after)
    if status in REQUEST_REFUSED:
        said = detail.get("message") if isinstance(detail, dict) else None
        reason = said[:500] if isinstance(said, str) and said else "no reason given"
        return InvalidParams(f"Invalid params: {provider} refused this sampling request "
                             f"(HTTP {status}): {reason}", data)
    hint = _STATUS_HINT.get(status) or (
        "it is unavailable; retry later" if retryable else "it failed")
    return InternalError(f"Sampling failed: {provider} answered HTTP {status}; {hint}.",
                         data)


def unreachable(provider: str, timed_out: bool) -> InternalError:
    """The error the server receives when ``provider`` could not be reached."""
    what = "did not answer in time" if timed_out else "could not be reached"
    return InternalError(f"Sampling failed: {provider} {what}; retry later.",
                         {"provider": provider, "retryable": True})


__all__ = ["REQUEST_REFUSED", "RETRYABLE", "Sampler", "blocks", "message_result",
           "status_error", "tool_result_text", "unreachable", "unsupported"]
