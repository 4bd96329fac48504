"""The stateless revision 2026-07-28 end to end, beside the stateful ones.

- stdio: ``examples/everything.py`` as a subprocess (``ServerProcess``): discovery,
  caching hints, the per-request ``_meta`` errors (-32602 / -32022), removed methods
  (-32601), resource-not-found as -32602, -32021, MRTR (input_required, retry with a new
  id and the exact ``requestState``, tampering, foreign state, extra and malformed
  ``inputResponses``, three rounds), logging only on opt-in, progress, cancellation, the
  ``subscriptions/listen`` stream, and a legacy ``initialize`` session running in the
  same process as modern requests without anything leaking between them.
- Streamable HTTP (uvicorn on 127.0.0.1, ``LiveServer``): the same errors with their HTTP
  statuses, header/body checks (-32020), no session ever minted, a legacy session on the
  same endpoint at the same time, a closed response stream cancelling its handler
  (``tests/servers/stateless_probe.py`` records it), ``subscriptions/listen``.
- mcpkit's ``Client``: ``mode="stateless"`` over memory, stdio and HTTP drives the MRTR
  tools through its handlers (each retry a new id with the exact state, checked on the
  wire); ``mode="auto"`` picks 2026-07-28 against mcpkit and falls back to the handshake
  against ``tests/servers/legacy_only.py``; ``resultType`` missing / unknown
  (``tests/servers/raw_modern.py``).
- Interop: the official ``mcp`` 2.3.0 ``Client`` in its 2026-07-28 mode (``mode=
  "2026-07-28"`` / ``"auto"``, which probe ``server/discover``) against everything.py over
  HTTP while an official stateful session (``mode="legacy"``) runs at the same time.

Every message a server sends is validated against the official schema: modern exchanges
against ``2026-07-28.schema.json`` (``ModernChecker``: an ``input_required`` answer against
``InputRequiredResult``, and a server never sends a request), legacy ones against the
session's negotiated revision. Every wait is bounded; subprocesses are always ended.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp.types as types
import pytest
from mcp import Client as OfficialClient

from mcpkit.client import Client, HandshakeError, InvalidResult, Stdio
from tests.servers import stateless_probe
from tests.support.asgi_tap import AsgiTap
from tests.support.http import ACCEPT_BOTH, LiveServer, McpHttp, Reply, everything_server
from tests.support.schemas import SchemaViolation, WireChecker, validate
from tests.support.stdio import EVERYTHING, ServerProcess
from tests.support.tap import TappedClient

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests" / "servers" / "stateless_probe.py"
LEGACY_ONLY = ROOT / "tests" / "servers" / "legacy_only.py"
RAW_MODERN = ROOT / "tests" / "servers" / "raw_modern.py"

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
CI = "io.modelcontextprotocol/clientInfo"
LL = "io.modelcontextprotocol/logLevel"
SI = "io.modelcontextprotocol/serverInfo"
SUB = "io.modelcontextprotocol/subscriptionId"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022
MRTR_METHODS = ("tools/call", "prompts/get", "resources/read")

ELICIT = {"elicitation": {}}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}},
               "required": ["name"]}

pytestmark = [
    # The official SDK marks logging/sampling/roots deprecated at 2026-07-28.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ====================================================================== schema checking


class ModernChecker(WireChecker):
    """``WireChecker`` for 2026-07-28 answers: an ``input_required`` result is validated as
    an ``InputRequiredResult`` (only for the MRTR methods, with inputRequests or
    requestState), and a server-sent request is a violation (servers never send them)."""

    def __init__(self, side: str = "server") -> None:
        super().__init__(side, revision=MODERN)

    def check(self, msg: Any) -> None:
        if isinstance(msg, dict) and "method" in msg and "id" in msg and self.side == "server":
            raise SchemaViolation(f"a 2026-07-28 server sent a request: {msg}")
        result = msg.get("result") if isinstance(msg, dict) else None
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            method = self._peer_requests.pop(msg.get("id"), None)
            if method not in MRTR_METHODS:
                raise SchemaViolation(f"input_required answering {method!r}: {msg}")
            if "inputRequests" not in result and "requestState" not in result:
                raise SchemaViolation(f"input_required with neither field: {msg}")
            validate(MODERN, "JSONRPCResultResponse", msg)
            validate(MODERN, "InputRequiredResult", result)
            self.checked += 1
            return
        super().check(msg)


class EraChecker:
    """One stdio process serving both eras: answers to modern requests (and the
    notifications that can only belong to them: tagged listen notifications, progress on
    a modern token) are validated as 2026-07-28, the rest as the legacy session's
    revision; an untagged notification that could be either must be valid in both."""

    def __init__(self) -> None:
        self.modern = ModernChecker()
        self.legacy = WireChecker("server")
        self.modern_ids: set[Any] = set()
        self.modern_tokens: set[Any] = set()
        self.checked = 0

    def saw_peer(self, msg: Any) -> None:
        params = msg.get("params") if isinstance(msg, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and PV in meta:
            if "id" in msg:
                self.modern_ids.add(msg["id"])
            if "progressToken" in meta:
                self.modern_tokens.add(meta["progressToken"])
            self.modern.saw_peer(msg)
        else:
            self.legacy.saw_peer(msg)

    def check(self, msg: Any) -> None:
        assert isinstance(msg, dict), msg
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        if "method" not in msg:
            target = self.modern if msg.get("id") in self.modern_ids else self.legacy
            target.check(msg)
        elif "id" in msg:
            self.legacy.check(msg)  # only a legacy session may get server requests
        elif SUB in (params.get("_meta") or {}) or (
                msg["method"] == "notifications/progress"
                and params.get("progressToken") in self.modern_tokens):
            self.modern.check(msg)
        else:
            self.legacy.check(msg)
            self.modern.check(msg)
        self.checked += 1


# ====================================================================== stdio helpers


def meta(caps: dict[str, Any] | None = None, *, level: str | None = None,
         token: Any = None, version: str = MODERN) -> dict[str, Any]:
    out: dict[str, Any] = {PV: version, CC: caps or {},
                           CI: {"name": "stateless-tests", "version": "1.0.0"}}
    if level is not None:
        out[LL] = level
    if token is not None:
        out["progressToken"] = token
    return out


def modern(p: ServerProcess, method: str, params: dict[str, Any] | None = None,
           caps: dict[str, Any] | None = None, **meta_options: Any) -> dict[str, Any]:
    """A modern request on stdio (``_meta`` added); its whole answer message."""
    return p.request(method, {**(params or {}), "_meta": meta(caps, **meta_options)})


def call(p: ServerProcess, name: str, arguments: dict[str, Any] | None = None,
         caps: dict[str, Any] | None = None, *, level: str | None = None, token: Any = None,
         **extra: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments or {}, **extra}
    return modern(p, "tools/call", params, caps, level=level, token=token)


def legacy_call(p: ServerProcess, name: str, arguments: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    return p.request("tools/call", {"name": name, "arguments": arguments or {}})


def error_of(msg: dict[str, Any], code: int, rid: Any = None) -> dict[str, Any]:
    assert "error" in msg, msg
    assert msg["error"]["code"] == code, msg
    if rid is not None:
        assert msg["id"] == rid, msg
    return msg["error"]


def text(msg: dict[str, Any]) -> str:
    result = msg["result"]
    assert result.get("resultType") == "complete", result
    assert result["content"][0]["type"] == "text", result
    return str(result["content"][0]["text"])


def complete(result: dict[str, Any], server: str = "mcpkit-everything") -> None:
    """The fields every complete modern result carries."""
    assert result["resultType"] == "complete", result
    assert result["_meta"][SI]["name"] == server, result


def take_notes(p: ServerProcess, method: str | None = None) -> list[dict[str, Any]]:
    """The notifications collected so far (of ``method``), and forget them all."""
    notes = [n for n in p.notifications if method is None or n["method"] == method]
    p.notifications.clear()
    return notes


def recv_until(p: ServerProcess, pred: Any, what: str, timeout: float = 10.0) -> dict[str, Any]:
    """Read messages until one satisfies ``pred`` (others: notifications are collected,
    responses fail the test)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out waiting for {what}")
        msg = p.recv(left)
        if pred(msg):
            return msg
        if "method" in msg and "id" not in msg:
            p.notifications.append(msg)
            continue
        raise AssertionError(f"unexpected {msg} while waiting for {what}")


def flip(state: str, index: int) -> str:
    """``state`` with the character at ``index`` changed to its neighbour in the base64url
    alphabet (only the lowest bit of that character differs)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    ch = state[index]
    other = alphabet[alphabet.index(ch) ^ 1]
    return state[:index] + other + state[index + 1:]


@pytest.fixture
def proc() -> Iterator[ServerProcess]:
    """examples/everything.py on stdio, every answer checked against 2026-07-28."""
    with ServerProcess() as p:
        p.checker = ModernChecker()
        yield p
        assert p.checker.checked > 0


@pytest.fixture
def dual() -> Iterator[ServerProcess]:
    """examples/everything.py on stdio serving both eras (``EraChecker``)."""
    with ServerProcess() as p:
        checker = EraChecker()
        p.checker = checker  # type: ignore[assignment]
        yield p
        assert checker.modern.checked > 0 and checker.legacy.checked > 0


# ====================================================================== stdio: discovery


def test_discover_result(proc: ServerProcess) -> None:
    msg = modern(proc, "server/discover")
    result = msg["result"]
    complete(result)
    assert MODERN in result["supportedVersions"]
    assert all(v >= MODERN for v in result["supportedVersions"])  # no handshake versions
    caps = result["capabilities"]
    assert caps["tools"] == {"listChanged": True}
    assert caps["prompts"] == {"listChanged": True}
    assert caps["resources"] == {"subscribe": True, "listChanged": True}
    assert "tasks" not in caps  # tasks moved to an extension
    assert result["_meta"][SI] == {"name": "mcpkit-everything", "version": "0.1.0",
                                   "title": "mcpkit everything server"}
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
    assert result["cacheScope"] in ("public", "private")
    assert "test_" in result["instructions"]
    assert "protocolVersion" not in result and "serverInfo" not in result


@pytest.mark.parametrize("method,params", [
    ("tools/list", {}),
    ("prompts/list", {}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "test://static-text"}),
    ("resources/read", {"uri": "test://template/7/data"}),
])
def test_cacheable_results_carry_hints(proc: ServerProcess, method: str,
                                       params: dict[str, Any]) -> None:
    result = modern(proc, method, params)["result"]
    complete(result)
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
    assert result["cacheScope"] in ("public", "private")


def test_non_cacheable_results_have_no_hints(proc: ServerProcess) -> None:
    for result in (call(proc, "echo", {"text": "x"})["result"],
                   modern(proc, "prompts/get", {"name": "test_simple_prompt"})["result"],
                   call(proc, "test_input_required_result_elicitation", caps=ELICIT)["result"]):
        assert "ttlMs" not in result and "cacheScope" not in result, result
        assert result["_meta"][SI]["name"] == "mcpkit-everything"
    listing = modern(proc, "tools/list")["result"]["tools"]
    assert all("execution" not in tool for tool in listing)  # tasks are an extension now


# ====================================================================== stdio: errors


@pytest.mark.parametrize("bad_meta,words", [
    ({PV: MODERN}, "clientCapabilities"),
    ({PV: MODERN, CC: None}, "clientCapabilities"),
    ({PV: MODERN, CC: ["sampling"]}, "clientCapabilities"),
    ({PV: 20260728, CC: {}}, "protocolVersion"),
    ({PV: None, CC: {}}, "protocolVersion"),
    ({PV: MODERN, CC: {}, LL: "loud"}, "logLevel"),
    ({PV: MODERN, CC: {}, LL: 3}, "logLevel"),
], ids=["no-caps", "caps-null", "caps-list", "version-number", "version-null",
        "bad-level", "level-number"])
def test_incomplete_meta_is_invalid_params(proc: ServerProcess, bad_meta: dict[str, Any],
                                           words: str) -> None:
    rid = proc.next_id()
    proc.send({"jsonrpc": "2.0", "id": rid, "method": "tools/list",
               "params": {"_meta": bad_meta}})
    err = error_of(proc.wait_for(rid), INVALID_PARAMS, rid)
    assert words in err["message"]
    complete(modern(proc, "server/discover")["result"])  # still serving


def test_request_without_meta_before_initialize_is_legacy(proc: ServerProcess) -> None:
    """Dual-era stdio: a request carrying no protocolVersion in ``_meta`` is the legacy
    era's (the process is not initialized: -32600 naming initialize). Pinned so that a
    change of this choice is deliberate (see the report on this file)."""
    err = error_of(proc.request("tools/list", {"_meta": {CC: {}}}), INVALID_REQUEST)
    assert "initialize" in err["message"]
    complete(modern(proc, "tools/list")["result"])


@pytest.mark.parametrize("version", ["2099-01-01", LEGACY, "2024-11-05", ""])
def test_unsupported_version(proc: ServerProcess, version: str) -> None:
    rid = proc.next_id()
    proc.send({"jsonrpc": "2.0", "id": rid, "method": "tools/list",
               "params": {"_meta": meta(version=version)}})
    err = error_of(proc.wait_for(rid), UNSUPPORTED_VERSION, rid)
    assert MODERN in err["data"]["supported"]
    assert err["data"]["requested"] == version
    # A handshake version in _meta does not open a legacy session either.
    error_of(proc.request("tools/list"), INVALID_REQUEST)


@pytest.mark.parametrize("method,params", [
    ("initialize", {"protocolVersion": LEGACY, "capabilities": {},
                    "clientInfo": {"name": "x", "version": "1"}}),
    ("ping", {}),
    ("logging/setLevel", {"level": "debug"}),
    ("resources/subscribe", {"uri": "test://static-text"}),
    ("resources/unsubscribe", {"uri": "test://static-text"}),
    ("tasks/list", {}),
])
def test_removed_methods(proc: ServerProcess, method: str, params: dict[str, Any]) -> None:
    err = error_of(modern(proc, method, params), METHOD_NOT_FOUND)
    assert method in err["message"]
    # A modern-_meta initialize must not have started a legacy session.
    error_of(proc.request("tools/list"), INVALID_REQUEST)


@pytest.mark.parametrize("uri", ["test://nope", "test://template/7/other", "file:///etc/x"])
def test_unknown_resource_is_invalid_params(proc: ServerProcess, uri: str) -> None:
    err = error_of(modern(proc, "resources/read", {"uri": uri}), INVALID_PARAMS)
    assert err["data"]["uri"] == uri


def test_missing_capability(proc: ServerProcess) -> None:
    err = error_of(call(proc, "test_missing_capability"), MISSING_CAPABILITY)
    assert err["data"]["requiredCapabilities"] == {"sampling": {}}
    assert text(call(proc, "test_missing_capability", caps={"sampling": {}})) == "Success"
    # Only this request's capabilities count: the next one without them fails again.
    error_of(call(proc, "test_missing_capability", caps={"elicitation": {}}),
             MISSING_CAPABILITY)
    err = error_of(call(proc, "test_input_required_result_elicitation"), MISSING_CAPABILITY)
    assert err["data"]["requiredCapabilities"] == {"elicitation": {}}
    err = error_of(call(proc, "test_input_required_result_list_roots", caps=ELICIT),
                   MISSING_CAPABILITY)
    assert err["data"]["requiredCapabilities"] == {"roots": {}}


# ====================================================================== stdio: MRTR


def first_round(p: ServerProcess, name: str = "test_input_required_result_elicitation",
                caps: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    rid = p.next_id()
    p.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": name, "arguments": {}, "_meta": meta(caps or ELICIT)}})
    result = p.wait_for(rid)["result"]
    assert result["resultType"] == "input_required", result
    return rid, result


def test_mrtr_elicitation_two_rounds(proc: ServerProcess) -> None:
    rid1, result = first_round(proc)
    assert set(result["inputRequests"]) == {"user_name"}
    ask = result["inputRequests"]["user_name"]
    assert ask["method"] == "elicitation/create"
    assert ask["params"]["mode"] == "form"
    assert ask["params"]["requestedSchema"] == NAME_SCHEMA
    assert "id" not in ask and "jsonrpc" not in ask
    state = result["requestState"]
    assert isinstance(state, str) and state
    rid2 = proc.next_id()
    assert rid2 != rid1
    proc.send({"jsonrpc": "2.0", "id": rid2, "method": "tools/call", "params": {
        "name": "test_input_required_result_elicitation", "arguments": {},
        "_meta": meta(ELICIT), "requestState": state,
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}}}})
    answer = proc.wait_for(rid2)
    assert text(answer) == "Hello, Ada!"
    complete(answer["result"])


def test_mrtr_answer_without_state_and_declined(proc: ServerProcess) -> None:
    """The answer alone suffices (this tool keeps nothing in the state); a declined
    elicitation is coped with (no error)."""
    answer = call(proc, "test_input_required_result_elicitation", caps=ELICIT,
                  inputResponses={"user_name": {"action": "accept",
                                                "content": {"name": "Bob"}}})
    assert text(answer) == "Hello, Bob!"
    _, result = first_round(proc)
    answer = call(proc, "test_input_required_result_elicitation", caps=ELICIT,
                  requestState=result["requestState"],
                  inputResponses={"user_name": {"action": "decline"}})
    assert text(answer) == "Hello, stranger!"


def test_mrtr_retry_without_the_answer_asks_again(proc: ServerProcess) -> None:
    _, result = first_round(proc)
    again = call(proc, "test_input_required_result_elicitation", caps=ELICIT,
                 requestState=result["requestState"])["result"]
    assert again["resultType"] == "input_required"
    assert set(again["inputRequests"]) == {"user_name"}


@pytest.mark.parametrize("where", ["body-start", "body-middle", "mac-middle", "last-char",
                                   "appended", "junk-inserted"])
def test_mrtr_tampered_state_is_refused(proc: ServerProcess, where: str) -> None:
    _, result = first_round(proc)
    state = result["requestState"]
    dot = state.index(".")
    tampered = {
        "body-start": lambda: flip(state, 0),
        "body-middle": lambda: flip(state, dot // 2),
        "mac-middle": lambda: flip(state, dot + (len(state) - dot) // 2),
        "last-char": lambda: flip(state, len(state) - 1),  # only spare bits change
        "appended": lambda: state + "A",
        "junk-inserted": lambda: state[:5] + "!" + state[5:],
    }[where]()
    assert tampered != state
    answers = {"user_name": {"action": "accept", "content": {"name": "Eve"}}}
    err = error_of(call(proc, "test_input_required_result_elicitation", caps=ELICIT,
                        requestState=tampered, inputResponses=answers), INVALID_PARAMS)
    assert "requestState" in err["message"]
    # The exact state is still good (the refusal was about the tampering).
    assert text(call(proc, "test_input_required_result_elicitation", caps=ELICIT,
                     requestState=state, inputResponses=answers)) == "Hello, Eve!"


def test_mrtr_state_of_another_request_is_refused(proc: ServerProcess) -> None:
    _, other = first_round(proc, "test_input_required_result_tampered_state")
    answers = {"user_name": {"action": "accept", "content": {"name": "Mallory"}}}
    err = error_of(call(proc, "test_input_required_result_elicitation", caps=ELICIT,
                        requestState=other["requestState"], inputResponses=answers),
                   INVALID_PARAMS)
    assert "requestState" in err["message"]
    # ... nor across methods: a tools/call state on prompts/get.
    msg = modern(proc, "prompts/get", {"name": "test_input_required_result_prompt",
                                       "requestState": other["requestState"]}, ELICIT)
    error_of(msg, INVALID_PARAMS)
    for bad in (12345, "", "no-dot-here", "a.b"):
        error_of(call(proc, "test_input_required_result_elicitation", caps=ELICIT,
                      requestState=bad, inputResponses=answers), INVALID_PARAMS)


def test_mrtr_extra_responses_are_ignored(proc: ServerProcess) -> None:
    extra = {"unasked": {"action": "accept", "content": {"x": 1}}}
    answer = call(proc, "echo", {"text": "hi"}, inputResponses=extra)
    assert text(answer) == "hi"
    _, result = first_round(proc)
    answer = call(proc, "test_input_required_result_elicitation", caps=ELICIT,
                  requestState=result["requestState"],
                  inputResponses={**extra, "user_name": {"action": "accept",
                                                         "content": {"name": "Ada"}}})
    assert text(answer) == "Hello, Ada!"


@pytest.mark.parametrize("responses", [[{"action": "accept"}], "user_name", 7])
def test_mrtr_malformed_input_responses(proc: ServerProcess, responses: Any) -> None:
    err = error_of(call(proc, "test_input_required_result_elicitation", caps=ELICIT,
                        inputResponses=responses), INVALID_PARAMS)
    assert "inputResponses" in err["message"]


@pytest.mark.parametrize(("answer", "words"), [
    ("yes", "must be a result object"),
    (None, "must be a result object"),
    ({"content": {"name": "Ada"}}, "with action"),
    ({"action": "maybe"}, "accept, decline or cancel"),
])
def test_mrtr_malformed_answer_is_refused_not_asked_again(
        proc: ServerProcess, answer: Any, words: str) -> None:
    """R26-07.MRTR.8: a malformed value in inputResponses is a JSON-RPC error naming the
    key, not silently dropped (which would ask for the same input again forever)."""
    _, result = first_round(proc)
    err = error_of(call(proc, "test_input_required_result_elicitation", caps=ELICIT,
                        requestState=result["requestState"],
                        inputResponses={"user_name": answer}), INVALID_PARAMS)
    assert "user_name" in err["message"] and words in err["message"], err


def test_mrtr_multi_round_takes_three_rounds(proc: ServerProcess) -> None:
    ids = []
    rid, r1 = first_round(proc, "test_input_required_result_multi_round")
    ids.append(rid)
    assert set(r1["inputRequests"]) == {"step1"}
    rid = proc.next_id()
    ids.append(rid)
    proc.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": "test_input_required_result_multi_round", "arguments": {},
        "_meta": meta(ELICIT), "requestState": r1["requestState"],
        "inputResponses": {"step1": {"action": "accept", "content": {"name": "Cy"}}}}})
    r2 = proc.wait_for(rid)["result"]
    assert r2["resultType"] == "input_required"
    assert set(r2["inputRequests"]) == {"step2"}
    assert r2["requestState"] != r1["requestState"]
    rid = proc.next_id()
    ids.append(rid)
    proc.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": "test_input_required_result_multi_round", "arguments": {},
        "_meta": meta(ELICIT), "requestState": r2["requestState"],
        "inputResponses": {"step2": {"action": "accept", "content": {"color": "blue"}}}}})
    assert text(proc.wait_for(rid)) == "Multi-round complete for Cy who likes blue"
    assert len(set(ids)) == 3


def test_mrtr_multiple_inputs_in_one_round(proc: ServerProcess) -> None:
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    _, result = first_round(proc, "test_input_required_result_multiple_inputs", caps)
    asks = result["inputRequests"]
    assert {k: v["method"] for k, v in asks.items()} == {
        "user_name": "elicitation/create", "greeting": "sampling/createMessage",
        "client_roots": "roots/list"}
    answers = {
        "user_name": {"action": "accept", "content": {"name": "Ada"}},
        "greeting": {"role": "assistant", "content": {"type": "text", "text": "Hi!"},
                     "model": "m"},
        "client_roots": {"roots": [{"uri": "file:///tmp/a"}, {"uri": "file:///tmp/b"}]},
    }
    answer = call(proc, "test_input_required_result_multiple_inputs", caps=caps,
                  requestState=result["requestState"], inputResponses=answers)
    assert text(answer) == "Name: Ada; Greeting: Hi!; Roots: 2"


def test_mrtr_asks_only_for_declared_kinds(proc: ServerProcess) -> None:
    _, result = first_round(proc, "test_input_required_result_capabilities",
                            {"sampling": {}})
    assert {v["method"] for v in result["inputRequests"].values()} == {
        "sampling/createMessage"}
    assert text(call(proc, "test_input_required_result_capabilities")) == (
        "No supported capabilities declared")


def test_mrtr_in_prompts_get(proc: ServerProcess) -> None:
    first = modern(proc, "prompts/get", {"name": "test_input_required_result_prompt"},
                   ELICIT)["result"]
    assert first["resultType"] == "input_required"
    assert set(first["inputRequests"]) == {"user_context"}
    done = modern(proc, "prompts/get", {
        "name": "test_input_required_result_prompt", "requestState": first["requestState"],
        "inputResponses": {"user_context": {"action": "accept",
                                            "content": {"context": "tea"}}}}, ELICIT)
    result = done["result"]
    complete(result)
    assert result["messages"][0]["content"]["text"] == "Prompt with context: tea"


# ====================================================================== stdio: logs, progress


def test_logs_only_when_requested(proc: ServerProcess) -> None:
    take_notes(proc)
    assert text(call(proc, "test_logging_tool")) == "Logging evaluated"
    assert take_notes(proc) == []
    call(proc, "test_logging_tool", level="info")
    logs = take_notes(proc, "notifications/message")
    assert [(n["params"]["level"], n["params"]["data"]) for n in logs] == [
        ("info", "Diagnostic trace logging activated")]
    call(proc, "test_tool_with_logging")
    assert take_notes(proc) == []
    call(proc, "test_tool_with_logging", level="warning")  # info is below the level
    assert take_notes(proc) == []
    call(proc, "test_tool_with_logging", level="debug")
    logs = take_notes(proc, "notifications/message")
    assert [n["params"]["data"] for n in logs] == [
        "Tool execution started", "Tool processing data", "Tool execution completed"]
    # The level is per request: the next request without one gets nothing again.
    call(proc, "test_tool_with_logging")
    assert take_notes(proc) == []


@pytest.mark.parametrize("token", ["p-7", 7])
def test_progress_only_with_token(proc: ServerProcess, token: Any) -> None:
    take_notes(proc)
    answer = call(proc, "test_tool_with_progress", token=token)
    assert text(answer) == str(token)
    notes = take_notes(proc)
    assert [n["method"] for n in notes] == ["notifications/progress"] * 3
    assert [n["params"]["progressToken"] for n in notes] == [token] * 3
    assert [n["params"]["progress"] for n in notes] == [0, 50, 100]
    assert text(call(proc, "test_tool_with_progress")) == "None"
    assert take_notes(proc) == []


def test_cancelled_on_stdio() -> None:
    with ServerProcess(PROBE) as p:
        p.checker = ModernChecker()
        rid = p.next_id()
        p.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
            "name": "slow", "arguments": {"tag": "stdio", "seconds": 30},
            "_meta": meta(token="slow-1")}})
        recv_until(p, lambda m: m.get("method") == "notifications/progress",
                   "the slow call's first progress")
        p.notify("notifications/cancelled", {"requestId": rid, "reason": "test"})
        deadline = time.monotonic() + 10
        while True:  # wait_for fails on any answer to rid: none may come
            record = json.loads(text(call(p, "events", {"tag": "stdio"})))
            if record == ["started", "cancelled"]:
                break
            assert record == ["started"], record
            assert time.monotonic() < deadline, "the handler was not cancelled"
            time.sleep(0.05)
        time.sleep(0.2)
        assert json.loads(text(call(p, "events", {"tag": "stdio"}))) == ["started",
                                                                         "cancelled"]
        assert take_notes(p) == []  # nothing more for the cancelled request


# ====================================================================== stdio: listen


def test_listen_on_stdio(proc: ServerProcess) -> None:
    watched = "test://watched-resource"
    proc.send({"jsonrpc": "2.0", "id": "L-1", "method": "subscriptions/listen", "params": {
        "notifications": {"toolsListChanged": True, "promptsListChanged": False,
                          "resourceSubscriptions": [watched]},
        "_meta": meta()}})
    ack = recv_until(proc, lambda m: m.get("method") == "notifications/subscriptions/"
                     "acknowledged", "the acknowledgement")
    assert ack["params"]["_meta"] == {SUB: "L-1"}
    assert ack["params"]["notifications"] == {"toolsListChanged": True,
                                              "resourceSubscriptions": [watched]}
    take_notes(proc)
    assert text(call(proc, "test_trigger_prompt_change")) == "Mutation triggered"
    assert text(call(proc, "test_trigger_tool_change")) == "Mutation triggered"
    notes = [n for n in take_notes(proc) if n["method"] != "notifications/resources/updated"]
    assert notes == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                      "params": {"_meta": {SUB: "L-1"}}}]
    update = recv_until(proc, lambda m: m.get("method") == "notifications/resources/updated",
                        "the watched resource's update (every 3 s)", timeout=8)
    assert update["params"] == {"uri": watched, "_meta": {SUB: "L-1"}}
    # Cancelling the listen ends it: no answer, no more notifications.
    proc.notify("notifications/cancelled", {"requestId": "L-1"})
    assert text(call(proc, "echo", {"text": "sync"})) == "sync"
    take_notes(proc)
    call(proc, "test_trigger_tool_change")
    assert take_notes(proc) == []


def test_two_listens_are_demultiplexed(proc: ServerProcess) -> None:
    for sid, flags in (("tools", {"toolsListChanged": True}),
                       ("prompts", {"promptsListChanged": True})):
        proc.send({"jsonrpc": "2.0", "id": sid, "method": "subscriptions/listen",
                   "params": {"notifications": flags, "_meta": meta()}})
        ack = recv_until(proc, lambda m: m.get("method", "").endswith("acknowledged"),
                         f"the acknowledgement of {sid}")
        assert ack["params"]["_meta"][SUB] == sid
        assert ack["params"]["notifications"] == flags
    take_notes(proc)
    call(proc, "test_trigger_prompt_change")
    call(proc, "test_trigger_tool_change")
    assert [(n["method"], n["params"]["_meta"][SUB]) for n in take_notes(proc)] == [
        ("notifications/prompts/list_changed", "prompts"),
        ("notifications/tools/list_changed", "tools")]
    error_of(modern(proc, "subscriptions/listen", {"notifications": "all"}), INVALID_PARAMS)
    for sid in ("tools", "prompts"):
        proc.notify("notifications/cancelled", {"requestId": sid})
    call(proc, "test_trigger_tool_change")
    assert take_notes(proc) == []


def test_open_listen_does_not_hold_up_exit_on_eof(proc: ServerProcess) -> None:
    """stdin closed with a listen open and a call running: the call still gets its answer
    (handlers may finish), the listen ends at once, and the process exits promptly."""
    proc.send({"jsonrpc": "2.0", "id": "L-eof", "method": "subscriptions/listen",
               "params": {"notifications": {"toolsListChanged": True}, "_meta": meta()}})
    recv_until(proc, lambda m: m.get("method", "").endswith("acknowledged"), "the ack")
    proc.send({"jsonrpc": "2.0", "id": "s-eof", "method": "tools/call", "params": {
        "name": "sleep", "arguments": {"seconds": 1}, "_meta": meta()}})
    start = time.monotonic()
    assert proc.proc.stdin is not None
    proc.proc.stdin.close()
    assert text(proc.wait_for("s-eof")) == "Slept 1 seconds."
    with pytest.raises(EOFError):
        proc.recv(5)  # nothing for the listen (it was cut off by the client), then EOF
    assert proc.proc.wait(5) == 0
    assert time.monotonic() - start < 3.5, "the open listen delayed the exit"


# ====================================================================== stdio: both eras


@pytest.mark.parametrize("version", [LEGACY, "2025-06-18"])
def test_legacy_session_and_modern_requests_share_a_process(dual: ServerProcess,
                                                            version: str) -> None:
    p = dual
    # Modern requests work before any handshake ...
    complete(modern(p, "server/discover")["result"])
    complete(modern(p, "tools/list")["result"])
    # ... a legacy session starts, declaring capabilities the modern requests do not ...
    init = p.initialize(version, capabilities={"sampling": {}, "elicitation": {}})
    assert init["protocolVersion"] == version
    assert "resultType" not in init
    assert p.request("logging/setLevel", {"level": "error"})["result"] == {}
    # ... and modern requests still stand on their own.
    listing = modern(p, "tools/list")["result"]
    complete(listing)
    assert "ttlMs" in listing
    err = error_of(call(p, "test_missing_capability"), MISSING_CAPABILITY)
    assert err["data"]["requiredCapabilities"] == {"sampling": {}}
    legacy = legacy_call(p, "test_missing_capability")["result"]
    assert legacy["content"][0]["text"] == "Success" and "resultType" not in legacy
    # Bad arguments follow the request's revision, not the session's.
    bad = call(p, "add", {"a": "one", "b": 2})["result"]
    assert bad["isError"] is True and bad["resultType"] == "complete"
    legacy_bad = legacy_call(p, "add", {"a": "one", "b": 2})
    if version == "2025-06-18":
        error_of(legacy_bad, INVALID_PARAMS)
    else:
        assert legacy_bad["result"]["isError"] is True
    # The session's log level filters the session, never a modern request.
    take_notes(p)
    legacy_call(p, "test_tool_with_logging")
    assert take_notes(p) == []
    call(p, "test_tool_with_logging", level="info")
    assert len(take_notes(p, "notifications/message")) == 3
    call(p, "test_logging_tool")
    assert take_notes(p) == []
    # Resource errors are shaped per era.
    error_of(modern(p, "resources/read", {"uri": "test://nope"}), INVALID_PARAMS)
    error_of(p.request("resources/read", {"uri": "test://nope"}), RESOURCE_NOT_FOUND)
    # MRTR for modern requests, a server->client request for the session.
    _, mrtr = first_round(p)
    assert set(mrtr["inputRequests"]) == {"user_name"}
    rid = p.next_id()
    p.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": "test_input_required_result_elicitation", "arguments": {}}})
    ask = recv_until(p, lambda m: m.get("method") == "elicitation/create", "elicitation")
    p.respond(ask["id"], {"action": "accept", "content": {"name": "Session"}})
    assert p.wait_for(rid)["result"]["content"][0]["text"] == "Hello, Session!"
    # Both at once: a slow modern call does not hold up the session.
    slow = p.next_id()
    p.send({"jsonrpc": "2.0", "id": slow, "method": "tools/call", "params": {
        "name": "sleep", "arguments": {"seconds": 1.5}, "_meta": meta(token="z")}})
    assert p.request("ping")["result"] == {}
    assert legacy_call(p, "echo", {"text": "meanwhile"})["result"]["content"][0][
        "text"] == "meanwhile"
    done = p.wait_for(slow, timeout=10)
    assert text(done) == "Slept 1.5 seconds."
    progress = take_notes(p, "notifications/progress")
    assert [n["params"]["progressToken"] for n in progress] == ["z", "z"]
    assert "ttlMs" not in p.request("tools/list")["result"]  # legacy shape kept


# ====================================================================== HTTP helpers


class ModernHttp:
    """Raw 2026-07-28 requests over Streamable HTTP; every reply is validated and must
    not carry a session id."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.raw = McpHttp(http, url)
        self.raw.checker = ModernChecker()

    def headers(self, method: str, name: str | None = None, **extra: str | None
                ) -> dict[str, str]:
        h = {"accept": ACCEPT_BOTH, "content-type": "application/json",
             "mcp-protocol-version": MODERN, "mcp-method": method}
        if name is not None:
            h["mcp-name"] = name
        for key, value in extra.items():
            header = key.replace("_", "-")
            if value is None:
                h.pop(header, None)
            else:
                h[header] = value
        return h

    def message(self, method: str, params: dict[str, Any] | None = None, rid: Any = None,
                caps: dict[str, Any] | None = None, **meta_options: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.raw.next_id() if rid is None else rid,
                "method": method,
                "params": {**(params or {}), "_meta": meta(caps, **meta_options)}}

    async def post(self, msg: dict[str, Any], headers: dict[str, str] | None = None
                   ) -> Reply:
        if headers is None:
            params = msg.get("params") or {}
            name = params.get("uri" if msg["method"] == "resources/read" else "name")
            headers = self.headers(msg["method"], name if isinstance(name, str) else None)
        reply = await self.raw.post(msg, headers=headers)
        assert "mcp-session-id" not in reply.headers, reply.headers
        return reply

    async def request(self, method: str, params: dict[str, Any] | None = None,
                      caps: dict[str, Any] | None = None, **meta_options: Any) -> Reply:
        return await self.post(self.message(method, params, caps=caps, **meta_options))

    async def call(self, name: str, arguments: dict[str, Any] | None = None,
                   caps: dict[str, Any] | None = None, **meta_options: Any) -> Reply:
        return await self.request("tools/call", {"name": name, "arguments": arguments or {}},
                                  caps, **meta_options)


def http_error(reply: Reply, status: int, code: int, rid: Any = None) -> dict[str, Any]:
    assert reply.status == status, (reply.status, reply.body)
    assert reply.content_type == "application/json", reply.headers
    body = reply.json
    assert body["error"]["code"] == code, body
    if rid is not None:
        assert body.get("id") == rid, body
    return body["error"]


def http_text(reply: Reply) -> str:
    assert reply.status == 200, (reply.status, reply.body)
    result = reply.json["result"]
    assert result["resultType"] == "complete", result
    return str(result["content"][0]["text"])


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Any, LiveServer]]:
    srv = everything_server()
    app = srv.asgi_app()
    with LiveServer(app) as live:
        yield srv, live


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


@pytest.fixture
def mh(served: tuple[Any, LiveServer], http: httpx.AsyncClient) -> ModernHttp:
    return ModernHttp(http, served[1].url)


# ====================================================================== HTTP: basics, errors


@pytest.mark.anyio
async def test_http_discover_and_lists(mh: ModernHttp, served: tuple[Any, LiveServer]
                                       ) -> None:
    app = served[1].app
    sessions = len(app.sessions)
    reply = await mh.request("server/discover")
    assert reply.status == 200 and reply.content_type == "application/json"
    result = reply.json["result"]
    complete(result)
    assert MODERN in result["supportedVersions"]
    assert {"ttlMs", "cacheScope"} <= set(result)
    for method, params in (("tools/list", {}), ("resources/read", {"uri": "test://static-text"}),
                           ("prompts/list", {})):
        result = (await mh.request(method, params)).json["result"]
        complete(result)
        assert {"ttlMs", "cacheScope"} <= set(result)
    # A stray (even made-up) Mcp-Session-Id is ignored, never echoed.
    msg = mh.message("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    reply = await mh.post(msg, mh.headers("tools/call", "echo", mcp_session_id="bogus-1"))
    assert http_text(reply) == "x"
    assert len(app.sessions) == sessions  # nothing was minted


@pytest.mark.anyio
@pytest.mark.parametrize("params,words", [
    (None, "_meta"),
    ({}, "_meta"),
    ({"_meta": {PV: MODERN}}, "clientCapabilities"),
    ({"_meta": {CC: {}}}, "protocolVersion"),
    ({"_meta": {PV: MODERN, CC: {}, LL: "loud"}}, "logLevel"),
], ids=["no-params", "no-meta", "no-caps", "no-version", "bad-level"])
async def test_http_incomplete_meta(mh: ModernHttp, params: Any, words: str) -> None:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": "m-1", "method": "tools/list"}
    if params is not None:
        msg["params"] = params
    reply = await mh.post(msg, mh.headers("tools/list"))
    err = http_error(reply, 400, INVALID_PARAMS, "m-1")
    assert words in err["message"]


@pytest.mark.anyio
async def test_http_unsupported_version(mh: ModernHttp) -> None:
    msg = mh.message("tools/list", rid=41, version="2099-01-01")
    reply = await mh.post(msg, mh.headers("tools/list", mcp_protocol_version="2099-01-01"))
    err = http_error(reply, 400, UNSUPPORTED_VERSION, 41)
    assert err["data"] == {"supported": [MODERN], "requested": "2099-01-01"}


def b64(value: str) -> str:
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


@pytest.mark.anyio
@pytest.mark.parametrize("method,params,header_changes", [
    ("tools/list", {}, {"mcp_protocol_version": LEGACY}),
    ("tools/list", {}, {"mcp_protocol_version": None}),
    ("tools/list", {}, {"mcp_method": "prompts/list"}),
    ("tools/list", {}, {"mcp_method": "Tools/List"}),  # values are case-sensitive
    ("tools/list", {}, {"mcp_method": None}),
    ("tools/call", {"name": "echo", "arguments": {"text": "x"}}, {"mcp_name": "add"}),
    ("tools/call", {"name": "echo", "arguments": {"text": "x"}}, {"mcp_name": None}),
    ("tools/call", {"name": "echo", "arguments": {"text": "x"}}, {"mcp_name": b64("add")}),
    ("tools/call", {"name": "echo", "arguments": {"text": "x"}},
     {"mcp_name": "=?base64?not*base64?="}),
    ("prompts/get", {"name": "test_simple_prompt"}, {"mcp_name": "test_prompt_with_image"}),
    ("prompts/get", {"name": "test_simple_prompt"}, {"mcp_name": None}),
    ("resources/read", {"uri": "test://static-text"}, {"mcp_name": "test://static-binary"}),
    ("resources/read", {"uri": "test://static-text"}, {"mcp_name": None}),
], ids=["version-differs", "version-missing", "method-differs", "method-case",
        "method-missing", "name-differs", "name-missing", "b64-name-differs", "b64-invalid",
        "prompt-name-differs", "prompt-name-missing", "uri-differs", "uri-missing"])
async def test_http_header_mismatch(mh: ModernHttp, method: str, params: dict[str, Any],
                                    header_changes: dict[str, str | None]) -> None:
    msg = mh.message(method, params, rid="h-1")
    name = params.get("uri" if method == "resources/read" else "name")
    reply = await mh.post(msg, mh.headers(method, name, **header_changes))
    err = http_error(reply, 400, HEADER_MISMATCH, "h-1")
    assert "Header mismatch" in err["message"]


@pytest.mark.anyio
@pytest.mark.parametrize("method,params", [
    ("tools/call", {"name": "echo", "arguments": {"text": "b64"}}),
    ("resources/read", {"uri": "test://static-text"}),
    ("prompts/get", {"name": "test_simple_prompt"}),
])
async def test_http_base64_name_accepted(mh: ModernHttp, method: str,
                                         params: dict[str, Any]) -> None:
    name = params.get("uri" if method == "resources/read" else "name")
    assert isinstance(name, str)
    reply = await mh.post(mh.message(method, params), mh.headers(method, b64(name)))
    assert reply.status == 200, reply.body
    complete(reply.json["result"])


@pytest.mark.anyio
@pytest.mark.parametrize("method,params", [
    ("ping", {}),
    ("logging/setLevel", {"level": "debug"}),
    ("resources/subscribe", {"uri": "test://static-text"}),
    ("initialize", {"protocolVersion": LEGACY, "capabilities": {},
                    "clientInfo": {"name": "x", "version": "1"}}),
])
async def test_http_removed_methods(mh: ModernHttp, method: str, params: dict[str, Any]
                                    ) -> None:
    reply = await mh.post(mh.message(method, params, rid=f"r-{method}"), mh.headers(method))
    err = http_error(reply, 404, METHOD_NOT_FOUND, f"r-{method}")
    assert method in err["message"]


@pytest.mark.anyio
async def test_http_missing_capability_and_unknown_resource(mh: ModernHttp) -> None:
    reply = await mh.call("test_missing_capability")
    err = http_error(reply, 400, MISSING_CAPABILITY)
    assert err["data"]["requiredCapabilities"] == {"sampling": {}}
    assert http_text(await mh.call("test_missing_capability", caps={"sampling": {}})) == (
        "Success")
    reply = await mh.request("resources/read", {"uri": "test://nope"})
    assert reply.status in (200, 400), reply.status  # not fixed by the spec
    assert reply.json["error"]["code"] == INVALID_PARAMS
    assert reply.json["error"]["data"] == {"uri": "test://nope"}


@pytest.mark.anyio
async def test_http_mrtr_round_trip(mh: ModernHttp) -> None:
    first = await mh.call("test_input_required_result_elicitation", caps=ELICIT)
    assert first.status == 200
    result = first.json["result"]
    assert result["resultType"] == "input_required"
    msg = mh.message("tools/call", {
        "name": "test_input_required_result_elicitation", "arguments": {},
        "requestState": result["requestState"],
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Web"}}}},
        caps=ELICIT)
    assert msg["id"] != first.json["id"]
    assert http_text(await mh.post(msg)) == "Hello, Web!"
    msg["params"]["requestState"] = flip(result["requestState"], 3)
    msg["id"] = mh.raw.next_id()
    reply = await mh.post(msg)
    assert reply.json["error"]["code"] == INVALID_PARAMS


@pytest.mark.anyio
async def test_http_progress_and_logs_on_the_request_stream(mh: ModernHttp) -> None:
    reply = await mh.call("test_tool_with_progress", token="hp")
    assert reply.content_type == "text/event-stream"
    assert reply.headers.get("x-accel-buffering") == "no"
    assert all(ev.id is None for ev in reply.events)  # no event ids: nothing to resume
    assert [m.get("method") for m in reply.messages] == ["notifications/progress"] * 3 + [
        None]
    assert reply.messages[-1]["result"]["content"][0]["text"] == "hp"
    reply = await mh.call("test_tool_with_logging", level="info")
    assert [m.get("method") for m in reply.messages] == ["notifications/message"] * 3 + [None]
    reply = await mh.call("test_tool_with_logging")
    assert reply.content_type == "application/json"  # no logs: a plain JSON answer
    assert http_text(reply) == "Tool with logging executed successfully"


# ====================================================================== HTTP: both eras


@pytest.mark.anyio
async def test_http_legacy_session_beside_modern_requests(
        mh: ModernHttp, served: tuple[Any, LiveServer], http: httpx.AsyncClient) -> None:
    live = served[1]
    legacy = McpHttp(http, live.url)
    await legacy.initialize(LEGACY, capabilities={"sampling": {}})
    assert legacy.session_id in live.app.sessions
    assert (await legacy.request("logging/setLevel", {"level": "error"})).json["result"] == {}
    sid = legacy.session_id
    assert sid is not None

    async def modern_slow() -> Reply:
        return await mh.call("sleep", {"seconds": 1.2}, token="slow")

    async with anyio.create_task_group() as tg:
        slow: list[Reply] = []

        async def run_slow() -> None:
            slow.append(await modern_slow())

        tg.start_soon(run_slow)
        await anyio.sleep(0.1)
        # The session works meanwhile, and its log level filters only the session.
        reply = await legacy.call_tool("test_tool_with_logging")
        assert reply.content_type == "application/json"
        assert "resultType" not in reply.json["result"]
        assert not slow
        # A modern request naming the session is still served on its own terms.
        msg = mh.message("tools/call", {"name": "test_missing_capability", "arguments": {}})
        err = http_error(await mh.post(msg, mh.headers(
            "tools/call", "test_missing_capability", mcp_session_id=sid)), 400,
            MISSING_CAPABILITY)
        assert err["data"]["requiredCapabilities"] == {"sampling": {}}
        reply = await legacy.call_tool("test_missing_capability")
        assert reply.json["result"]["content"][0]["text"] == "Success"
        msg = mh.message("tools/call", {"name": "test_tool_with_logging", "arguments": {}},
                         level="info")
        reply = await mh.post(msg, mh.headers("tools/call", "test_tool_with_logging",
                                              mcp_session_id=sid))
        assert [m.get("method") for m in reply.messages].count("notifications/message") == 3
    assert slow and http_text(slow[0]) == "Slept 1.2 seconds."
    assert [m["params"]["progressToken"] for m in slow[0].messages[:-1]] == ["slow", "slow"]
    assert (await legacy.request("ping")).json["result"] == {}
    assert (await legacy.delete()).status == 200


# ====================================================================== HTTP: cancellation


@pytest.fixture(scope="module")
def probe_live() -> Iterator[LiveServer]:
    with LiveServer(stateless_probe.server.asgi_app()) as live:
        yield live


async def wait_record(mh: ModernHttp, tag: str, expected: list[str],
                      timeout: float = 10.0) -> None:
    """Until the probe's ``events(tag)`` (asked over HTTP) is ``expected``."""
    with anyio.fail_after(timeout):
        while True:
            record = json.loads(http_text(await mh.call("events", {"tag": tag})))
            if record == expected:
                return
            assert record == expected[:len(record)], record
            await anyio.sleep(0.05)


@pytest.mark.anyio
async def test_http_closing_the_sse_stream_cancels(probe_live: LiveServer,
                                                   http: httpx.AsyncClient) -> None:
    mh = ModernHttp(http, probe_live.url)
    msg = mh.message("tools/call", {"name": "slow", "arguments": {"tag": "sse",
                                                                  "seconds": 30}},
                     token="c1")
    async with mh.raw.open_post(msg, mh.headers("tools/call", "slow")) as stream:
        assert stream.status == 200 and stream.content_type == "text/event-stream"
        _, first = await stream.next_message()
        assert first["method"] == "notifications/progress"
    await wait_record(mh, "sse", ["started", "cancelled"])
    assert stateless_probe.EVENTS["sse"] == ["started", "cancelled"]


@pytest.mark.anyio
async def test_http_abandoning_a_pending_json_answer_cancels(
        probe_live: LiveServer, http: httpx.AsyncClient) -> None:
    """No progress asked: nothing is sent before the answer, and the client gives up
    while waiting for it; the disconnect alone must cancel the handler."""
    mh = ModernHttp(http, probe_live.url)
    msg = mh.message("tools/call", {"name": "slow", "arguments": {"tag": "json",
                                                                  "seconds": 30}})
    headers = mh.headers("tools/call", "slow")
    async with httpx.AsyncClient(timeout=60) as other:  # its connection is dropped below
        async with anyio.create_task_group() as tg:

            async def abandoned() -> None:
                await other.post(probe_live.url, content=json.dumps(msg), headers=headers)
                raise AssertionError("the call was answered instead of abandoned")

            tg.start_soon(abandoned)
            await wait_record(mh, "json", ["started"])
            tg.cancel_scope.cancel()
    await wait_record(mh, "json", ["started", "cancelled"])


# ====================================================================== HTTP: listen


@pytest.mark.anyio
async def test_http_listen(mh: ModernHttp, served: tuple[Any, LiveServer]) -> None:
    srv, live = served
    msg = mh.message("subscriptions/listen", {"notifications": {
        "toolsListChanged": True, "promptsListChanged": False, "bogus": True}},
        rid="listen-1")
    async with mh.raw.open_post(msg, mh.headers("subscriptions/listen")) as stream:
        assert stream.status == 200 and stream.content_type == "text/event-stream"
        assert "mcp-session-id" not in stream.resp.headers
        _, ack = await stream.next_message()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"] == {"_meta": {SUB: "listen-1"},
                                 "notifications": {"toolsListChanged": True}}
        assert http_text(await mh.call("test_trigger_prompt_change")) == "Mutation triggered"
        assert http_text(await mh.call("test_trigger_tool_change")) == "Mutation triggered"
        # The prompt change came first: had it been sent, it would be next.
        event, note = await stream.next_message()
        assert note == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                        "params": {"_meta": {SUB: "listen-1"}}}
        assert event.id is None
        with anyio.move_on_after(0.5):
            _, extra = await stream.next_message()
            raise AssertionError(f"nothing else was asked for: {extra}")
    with anyio.fail_after(5):  # closing the stream ended the subscription
        while live.call(lambda: len(srv._peers.listening)):  # noqa: ASYNC110 - another thread
            await anyio.sleep(0.05)


# ====================================================================== mcpkit Client


async def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada", "color": "teal", "ok": True,
                                            "context": "ctx"}}


async def on_sample(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "Paris"},
            "model": "test-model"}


def check_retries(sent: list[dict[str, Any]], received: list[dict[str, Any]]) -> int:
    """Every input_required answer is followed by exactly one retry: a new id, the
    original params, the exact requestState, an answer per input request. Returns how
    many retries there were."""
    by_id = {m["id"]: m for m in sent if "id" in m and "method" in m}
    assert len(by_id) == len([m for m in sent if "id" in m]), "an id was reused"
    order = list(by_id)
    retries = 0
    for answer in received:
        result = answer.get("result")
        if not isinstance(result, dict) or result.get("resultType") != "input_required":
            continue
        original = by_id[answer["id"]]
        state = result["requestState"]
        follow = [m for m in sent if (m.get("params") or {}).get("requestState") == state]
        assert len(follow) == 1, (state, follow)
        retry = follow[0]
        assert order.index(retry["id"]) > order.index(original["id"])  # a new, later id
        core = {"_meta", "inputResponses", "requestState"}
        assert {k: v for k, v in retry["params"].items() if k not in core} == {
            k: v for k, v in original["params"].items() if k not in core}
        assert retry["method"] == original["method"]
        assert set(retry["params"].get("inputResponses", {})) == set(
            result.get("inputRequests", {}))
        retries += 1
    return retries


def validate_received(sent: list[Any], received: list[Any]) -> None:
    checker = ModernChecker()
    for msg in sent:
        checker.saw_peer(msg)
    for msg in received:
        checker.check(msg)
    assert checker.checked == len(received) > 0


@pytest.fixture(params=["memory", "stdio", "http"])
def target(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "memory":
        yield everything_server()
    elif request.param == "stdio":
        yield [sys.executable, str(EVERYTHING)]
    else:
        with LiveServer(everything_server().asgi_app()) as live:
            yield live.url


@pytest.mark.anyio
async def test_client_stateless_runs_mrtr_tools(target: Any) -> None:
    async with TappedClient(target, mode="stateless", protocol_version=MODERN,
                            elicitation=on_elicit, sampling=on_sample,
                            roots=["file:///tmp/a"], timeout=15) as client:
        assert client.stateless_version == MODERN
        assert client.protocol_version == MODERN
        assert client.server_info["name"] == "mcpkit-everything"
        expected = {
            "test_input_required_result_elicitation": "Hello, Ada!",
            "test_input_required_result_sampling": "Sampling result: Paris",
            "test_input_required_result_list_roots": "Found 1 root(s)",
            "test_input_required_result_multiple_inputs":
                "Name: Ada; Greeting: Paris; Roots: 1",
            "test_input_required_result_multi_round":
                "Multi-round complete for Ada who likes teal",
            "test_input_required_result_request_state": "state-ok: requestState validated",
        }
        for name, want in expected.items():
            result = await client.call_tool(name, {})
            assert not result.is_error
            assert result.content[0].text == want  # type: ignore[union-attr]
        prompt = await client.get_prompt("test_input_required_result_prompt")
        assert prompt.messages[0].content.text == "Prompt with context: ctx"  # type: ignore[union-attr]
        wire = client.wire
        wire.assert_clean()
        assert "initialize" not in wire.sent_methods()
        assert wire.sent_methods()[0] == "server/discover"
        for msg in wire.sent:
            assert msg["params"]["_meta"][PV] == MODERN
            assert isinstance(msg["params"]["_meta"][CC], dict)
        # 7 MRTR requests; multi_round needs two retries.
        assert check_retries(wire.sent, wire.received) == 8
        validate_received(wire.sent, wire.received)


@pytest.mark.anyio
async def test_client_stateless_http_headers_on_the_wire() -> None:
    tap = AsgiTap(everything_server().asgi_app())
    with LiveServer(tap) as live:
        async with Client(live.url, mode="stateless", protocol_version=MODERN,
                          elicitation=on_elicit, timeout=15) as client:
            result = await client.call_tool("test_input_required_result_elicitation")
            assert result.content[0].text == "Hello, Ada!"  # type: ignore[union-attr]
    requests = {e["n"]: e for e in tap.entries if e["ev"] == "request"}
    bodies = {e["n"]: e["msg"] for e in tap.entries if e["ev"] == "c2s"}
    responses = {e["n"]: e for e in tap.entries if e["ev"] == "response"}
    calls = [n for n, b in bodies.items() if b.get("method") == "tools/call"
             and b["params"]["name"] == "test_input_required_result_elicitation"]
    assert len(calls) == 2
    for n in bodies:
        headers = requests[n]["headers"]
        assert requests[n]["method"] == "POST"
        assert headers["mcp-protocol-version"] == MODERN
        assert headers["mcp-method"] == bodies[n]["method"]
        assert "mcp-session-id" not in headers
        assert "mcp-session-id" not in responses[n]["headers"]
    for n in calls:
        assert requests[n]["headers"]["mcp-name"] == "test_input_required_result_elicitation"
    assert bodies[calls[0]]["id"] != bodies[calls[1]]["id"]
    first_answer = next(e["msg"] for e in tap.entries if e["ev"] == "s2c" and e["n"] == calls[0])
    assert bodies[calls[1]]["params"]["requestState"] == first_answer["result"]["requestState"]
    assert not [e for e in tap.entries if e["ev"] == "request" and e["method"] != "POST"]
    validate_received([e["msg"] for e in tap.entries if e["ev"] == "c2s"],
                      [e["msg"] for e in tap.entries if e["ev"] == "s2c"])


@pytest.mark.anyio
async def test_client_auto_picks_stateless_against_mcpkit() -> None:
    probe = TappedClient([sys.executable, str(EVERYTHING)], mode="auto", timeout=15)
    probe.checker.revision = MODERN  # nothing offered: auto probes the newest it knows
    async with probe as client:
        assert client.stateless_version == MODERN
        assert client.protocol_version == MODERN
        assert (await client.call_tool("echo", {"text": "auto"})).content[0].text == "auto"  # type: ignore[union-attr]
        assert "initialize" not in client.wire.sent_methods()
        client.wire.assert_clean()
        validate_received(client.wire.sent, client.wire.received)
    async with Client(everything_server(), mode="auto", timeout=15) as client:
        assert client.stateless_version == MODERN
        assert client.supports("tools.listChanged")
        assert client.instructions and "test_" in client.instructions


@pytest.mark.anyio
async def test_client_auto_falls_back_to_the_handshake(tmp_path: Path) -> None:
    log = tmp_path / "legacy.log"
    async with Client(Stdio([sys.executable, str(LEGACY_ONLY)],
                            env={"MCPKIT_LEGACY_LOG": str(log)}),
                      mode="auto", timeout=15) as client:
        assert client.stateless_version is None
        assert client.protocol_version == LEGACY
        assert client.server_info["name"] == "legacy-only"
        result = await client.call_tool("echo", {"text": "old"})
        assert result.content[0].text == "old"  # type: ignore[union-attr]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    methods = [m.get("method") for m in lines]
    assert methods[:3] == ["server/discover", "initialize", "notifications/initialized"]
    assert lines[0]["params"]["_meta"][PV] == MODERN
    assert all("_meta" not in (m.get("params") or {}) or PV not in m["params"]["_meta"]
               for m in lines[1:])
    with pytest.raises(HandshakeError):
        async with Client([sys.executable, str(LEGACY_ONLY)], mode="stateless",
                          timeout=15):
            pass


@pytest.mark.anyio
async def test_client_result_type_handling(tmp_path: Path) -> None:
    log = tmp_path / "raw.log"
    async with Client(Stdio([sys.executable, str(RAW_MODERN)], env={"MCPKIT_RAW_LOG": str(log)}),
                      mode="stateless", protocol_version=MODERN, timeout=15) as client:
        result = await client.call_tool("no_result_type")
        assert result.content[0].text == "no resultType here"  # type: ignore[union-attr]
        with pytest.raises(InvalidResult, match="task"):
            await client.call_tool("task_result")
        result = await client.call_tool("state_only")
        assert result.content[0].text == "state honoured"  # type: ignore[union-attr]
        # The client still works after the rejected result.
        assert (await client.call_tool("no_result_type")).content
    sent = [json.loads(line) for line in log.read_text().splitlines()]
    state_calls = [m for m in sent if m.get("method") == "tools/call"
                   and m["params"]["name"] == "state_only"]
    assert len(state_calls) == 2
    first, retry = state_calls
    assert "requestState" not in first["params"]
    assert retry["params"]["requestState"] == "opaque-state-0001"
    assert "inputResponses" not in retry["params"]
    assert retry["id"] != first["id"]
    assert len({m["id"] for m in sent if "id" in m}) == len([m for m in sent if "id" in m])


# ====================================================================== interop (official)


def validate_tap(tap: AsgiTap) -> tuple[int, int]:
    """Every message mcpkit's server sent, validated per era: exchanges whose request
    carried modern ``_meta`` against 2026-07-28, the rest against the legacy session's
    revision. Returns (modern, legacy) exchange counts."""
    modern_checker, legacy_checker = ModernChecker(), WireChecker("server")
    era: dict[int, str] = {}
    counts = {"modern": 0, "legacy": 0}
    for entry in tap.entries:
        n = entry["n"]
        if entry["ev"] == "request":
            era[n] = "modern" if "mcp-method" in entry["headers"] else "legacy"
        elif entry["ev"] == "c2s":
            msg = entry["msg"]
            params = msg.get("params") if isinstance(msg, dict) else None
            is_modern = isinstance(params, dict) and PV in (params.get("_meta") or {})
            assert is_modern == (era[n] == "modern"), entry
            (modern_checker if is_modern else legacy_checker).saw_peer(msg)
            counts[era[n]] += 1
        elif entry["ev"] == "response" and era[n] == "modern":
            assert "mcp-session-id" not in entry["headers"], entry
        elif entry["ev"] == "s2c":
            msg = entry["msg"]
            if entry["status"] >= 400 and "error" in msg and "id" not in msg:
                msg = {**msg, "id": None}
            (modern_checker if era[n] == "modern" else legacy_checker).check(msg)
    assert modern_checker.checked and legacy_checker.checked
    return counts["modern"], counts["legacy"]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", [MODERN, "auto"])
async def test_official_stateless_client_beside_official_session(mode: str) -> None:
    elicited: list[Any] = []
    logs: list[Any] = []
    progress: list[float] = []

    async def on_elicitation(context: Any, params: Any) -> types.ElicitResult:
        elicited.append(params)
        return types.ElicitResult(action="accept", content={"name": "Official"})

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    tap = AsgiTap(everything_server().asgi_app())
    with LiveServer(tap) as live:
        async with AsyncExitStack() as stack:
            legacy = await stack.enter_async_context(OfficialClient(
                live.url, mode="legacy", elicitation_callback=on_elicitation,
                read_timeout_seconds=20))
            stateless = await stack.enter_async_context(OfficialClient(
                live.url, mode=mode, elicitation_callback=on_elicitation, log_level="info",
                logging_callback=on_log, read_timeout_seconds=20))
            assert legacy.protocol_version == LEGACY
            assert stateless.protocol_version == MODERN
            assert len(tap.app.sessions) == 1  # only the legacy one
            results: dict[str, Any] = {}

            async def run_legacy() -> None:
                results["legacy-elicit"] = await legacy.call_tool(
                    "test_elicitation", {"message": "From the session?"})
                results["legacy-sleep"] = await legacy.call_tool("sleep", {"seconds": 1})

            async def run_modern() -> None:
                results["tools"] = await stateless.list_tools()
                results["add"] = await stateless.call_tool("add", {"a": 2, "b": 3})
                results["mrtr"] = await stateless.call_tool(
                    "test_input_required_result_elicitation", {})
                results["log"] = await stateless.call_tool("test_logging_tool", {})
                results["progress"] = await stateless.call_tool(
                    "test_tool_with_progress", {}, progress_callback=on_progress)

            with anyio.fail_after(40):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(run_legacy)
                    tg.start_soon(run_modern)
        assert {t.name for t in results["tools"].tools} >= {
            "echo", "test_input_required_result_elicitation"}
        assert results["add"].structured_content == {"result": 5}
        assert results["mrtr"].content[0].text == "Hello, Official!"
        assert results["log"].content[0].text == "Logging evaluated"
        assert [p.data for p in logs] == ["Diagnostic trace logging activated"]
        assert progress == [0, 50, 100]
        assert results["legacy-elicit"].content[0].text.startswith(
            "User response: action=accept")
        assert results["legacy-sleep"].content[0].text == "Slept 1 seconds."
        assert len(elicited) == 2
    modern_count, legacy_count = validate_tap(tap)
    assert modern_count >= 6 and legacy_count >= 3
    # The MRTR retry: a new id with the exact requestState.
    sent = [e["msg"] for e in tap.entries if e["ev"] == "c2s"]
    got = [e["msg"] for e in tap.entries if e["ev"] == "s2c"]
    modern_sent = [m for m in sent if PV in ((m.get("params") or {}).get("_meta") or {})]
    answers = [m for m in got if isinstance(m.get("result"), dict)
               and m["result"].get("resultType") == "input_required"]
    assert len(answers) == 1
    assert check_retries(modern_sent, answers) == 1
