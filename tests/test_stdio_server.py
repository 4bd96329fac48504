"""Servers as real subprocesses over stdio: hostile input, lifecycle, features, shutdown.

Every case drives ``examples/everything.py`` or ``tests/servers/toolbox.py`` through
``ServerProcess`` (raw JSON lines in, every line out parsed as JSON and schema-checked),
asserts the exact JSON-RPC error code and that the message tells the client what to do,
and then proves the server still serves.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.schemas import WireChecker
from tests.support.stdio import EVERYTHING, LATEST, ServerProcess

TOOLBOX = Path(__file__).resolve().parent / "servers" / "toolbox.py"
OLDER = ["2024-11-05", "2025-03-26", "2025-06-18"]
ALL_VERSIONS = [*OLDER, LATEST]

ABSENT = object()  # assert_error(id=ABSENT): the error carries no "id" member

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002


# ---------------------------------------------------------------------------- helpers


@pytest.fixture
def raw() -> Iterator[ServerProcess]:
    """The everything server, not initialized."""
    with ServerProcess() as s:
        yield s


@pytest.fixture
def srv(raw: ServerProcess) -> ServerProcess:
    """The everything server, initialized at the latest revision."""
    raw.initialize()
    return raw


@pytest.fixture
def toolbox() -> Iterator[ServerProcess]:
    """The toolbox server, initialized at the latest revision."""
    with ServerProcess(TOOLBOX) as s:
        s.initialize()
        yield s


def line(msg: Any) -> bytes:
    return json.dumps(msg).encode() + b"\n"


def call(s: ServerProcess, name: str, arguments: dict[str, Any] | None = None,
         timeout: float = 10.0, **params: Any) -> dict[str, Any]:
    return s.request("tools/call", {"name": name, "arguments": arguments or {}, **params},
                     timeout=timeout)


def text_of(resp: dict[str, Any]) -> str:
    assert "result" in resp, resp
    return " ".join(b["text"] for b in resp["result"]["content"] if b["type"] == "text")


def assert_error(msg: dict[str, Any], code: int, *words: str, id: Any = ...) -> None:
    """``msg`` is an error with ``code`` whose message mentions every one of ``words``."""
    assert "error" in msg, msg
    assert msg["error"]["code"] == code, msg
    if id is ABSENT:
        assert "id" not in msg, msg
    elif id is not ...:
        assert "id" in msg and msg["id"] == id, msg
    text = msg["error"]["message"]
    assert isinstance(text, str) and len(text) > 20, msg
    for word in words:
        assert word.lower() in text.lower(), (word, text)


def unreadable(version: str | None = LATEST) -> Any:
    """The id of an error answering a message whose id could not be read: omitted in
    2025-11-25 (its schema forbids a null id), null otherwise (JSON-RPC 2.0), and null
    before initialize (no revision yet)."""
    return ABSENT if version == LATEST else None


def collect_until(s: ServerProcess, done: Callable[[Any], bool],
                  timeout: float = 10.0) -> list[Any]:
    """Every message up to and including the first for which ``done`` holds."""
    seen = []
    deadline = time.monotonic() + timeout
    while True:
        msg = s.recv(max(0.01, deadline - time.monotonic()))
        seen.append(msg)
        if done(msg):
            return seen


def ping_after(s: ServerProcess) -> list[Any]:
    """Ping; every message up to the pong (which is checked)."""
    rid = f"ping-{s.next_id()}"
    s.send({"jsonrpc": "2.0", "id": rid, "method": "ping"})
    seen = collect_until(s, lambda m: isinstance(m, dict) and m.get("id") == rid)
    assert seen[-1] == {"jsonrpc": "2.0", "id": rid, "result": {}}
    return seen


def read_raw_until_pong(s: ServerProcess) -> list[Any]:
    """After raw input: send a ping, return everything the server wrote before the pong."""
    return ping_after(s)[:-1]


def assert_serving(s: ServerProcess) -> None:
    """The session still works: ping, then a real tool call."""
    assert ping_after(s)[:-1] == []
    assert text_of(call(s, "echo", {"text": "still here"})) == "still here"


def single_error(msgs: list[Any]) -> dict[str, Any]:
    assert len(msgs) == 1, msgs
    return msgs[0]


def after_close(s: ServerProcess) -> list[Any]:
    """End the server (stdin EOF; exit code 0) and return what it wrote but was not read."""
    assert s.close() == 0
    assert s.proc.stdout is not None
    rest = s._buf + (s.proc.stdout.read() or b"")
    return [json.loads(raw_line) for raw_line in rest.splitlines()]


def nothing_for(msgs: list[Any], rid: Any) -> None:
    assert [m for m in msgs if isinstance(m, dict) and "method" not in m
            and m.get("id") == rid] == []


# ---------------------------------------------------------------------------- framing


@pytest.mark.parametrize("data", [
    b"this is not json\n",
    b'{"jsonrpc": "2.0", "id": 1, "method": "ping"\n',
    b"{'jsonrpc': '2.0', 'id': 1, 'method': 'ping'}\n",
    b'{"jsonrpc":"2.0","id":1,"method":"ping"}}\n',
], ids=["text", "truncated", "single-quotes", "trailing-garbage"])
def test_non_json_line_is_parse_error(srv: ServerProcess, data: bytes) -> None:
    srv.send_raw(data)
    err = single_error(read_raw_until_pong(srv))
    assert_error(err, PARSE_ERROR, "not valid JSON", "one", id=unreadable())
    assert_serving(srv)


def test_invalid_utf8_is_parse_error(srv: ServerProcess) -> None:
    srv.send_raw(b"\xff\xfe{}\n")
    err = single_error(read_raw_until_pong(srv))
    assert_error(err, PARSE_ERROR, "UTF-8", id=unreadable())
    assert_serving(srv)


def test_parse_error_before_initialize_then_handshake_works(raw: ServerProcess) -> None:
    raw.send_raw(b"garbage\n")
    err = single_error(read_raw_until_pong(raw))
    assert_error(err, PARSE_ERROR, "JSON", id=unreadable(None))
    raw.initialize()
    assert_serving(raw)


@pytest.mark.parametrize("version", [None, *ALL_VERSIONS])
def test_unreadable_id_spelling_per_revision(raw: ServerProcess, version: str | None) -> None:
    if version is not None:
        raw.initialize(version)
    for data, code in ((b"{oops\n", PARSE_ERROR),
                       (b'{"jsonrpc":"2.0","id":true,"method":"ping"}\n', INVALID_REQUEST)):
        raw.send_raw(data)
        assert_error(single_error(read_raw_until_pong(raw)), code, id=unreadable(version))
    if version is not None:
        assert_serving(raw)


@pytest.mark.parametrize("chunks", [1, 8], ids=["one-write", "several-writes"])
def test_line_over_small_size_limit_is_invalid_request(chunks: int) -> None:
    with ServerProcess(TOOLBOX, env={"MCPKIT_TEST_MAX_MESSAGE_SIZE": "1024"}) as s:
        s.initialize()
        # Just under the limit still works, so the limit is the configured one.
        ok = {"jsonrpc": "2.0", "id": "small", "method": "ping"}
        ok["params"] = {"_meta": {"pad": "x" * (1000 - len(line(ok)) - 30)}}
        assert len(line(ok)) <= 1024
        s.send_raw(line(ok))
        assert s.wait_for("small") == {"jsonrpc": "2.0", "id": "small", "result": {}}

        big = line({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "y" * 10_000}}})
        step = -(-len(big) // chunks)
        for i in range(0, len(big), step):
            s.send_raw(big[i:i + step])
            if chunks > 1:
                time.sleep(0.02)  # separate reads on the server side
        err = single_error(read_raw_until_pong(s))  # exactly one error, nothing for id 5
        assert_error(err, INVALID_REQUEST, "too large", "1024", "smaller", id=unreadable())
        assert_serving(s)


def test_huge_line_over_default_limit_sent_in_pieces(srv: ServerProcess) -> None:
    piece = b"z" * (1 << 20)
    srv.send_raw(b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo",'
                 b'"arguments":{"text":"')
    for _ in range(5):  # 5 MiB: over the 4 MiB default
        srv.send_raw(piece)
    srv.send_raw(b'"}}}\n')
    err = single_error(read_raw_until_pong(srv))
    assert_error(err, INVALID_REQUEST, "too large", str(4 * 1024 * 1024), id=unreadable())
    assert_serving(srv)


def test_unterminated_last_line_is_answered_at_eof(raw: ServerProcess) -> None:
    raw.send_raw(b'{"jsonrpc":"2.0","id":"last","method":"ping"}')
    time.sleep(0.2)
    assert raw.proc.stdin is not None
    raw.proc.stdin.close()
    assert raw.recv() == {"jsonrpc": "2.0", "id": "last", "result": {}}
    assert raw.proc.wait(5) == 0


# ---------------------------------------------------------------------------- JSON-RPC envelope


@pytest.mark.parametrize("version", ["1.0", 2.0, None, "missing"])
def test_wrong_jsonrpc_version_is_invalid_request(srv: ServerProcess, version: Any) -> None:
    msg: dict[str, Any] = {"jsonrpc": version, "id": 41, "method": "ping"}
    if version == "missing":
        del msg["jsonrpc"]
    srv.send_raw(line(msg))
    err = single_error(read_raw_until_pong(srv))
    assert_error(err, INVALID_REQUEST, '"jsonrpc"', '"2.0"', id=41)  # the id was readable
    assert_serving(srv)


@pytest.mark.parametrize("bad_id", [None, 1.5, {}, [], True, False, 1e3],
                         ids=["null", "fraction", "object", "array", "true", "false", "float"])
def test_bad_request_id_is_invalid_request(srv: ServerProcess, bad_id: Any) -> None:
    srv.send_raw(line({"jsonrpc": "2.0", "id": bad_id, "method": "tools/list"}))
    err = single_error(read_raw_until_pong(srv))
    assert_error(err, INVALID_REQUEST, '"id"', "string or an integer", id=unreadable())
    assert_serving(srv)


@pytest.mark.parametrize("value", ['"a string"', "null", "42"])
def test_non_object_message_is_invalid_request(srv: ServerProcess, value: str) -> None:
    srv.send_raw(value.encode() + b"\n")
    err = single_error(read_raw_until_pong(srv))
    assert_error(err, INVALID_REQUEST, "JSON object", id=unreadable())
    assert_serving(srv)


def test_params_not_an_object_is_invalid_request(srv: ServerProcess) -> None:
    srv.send_raw(line({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": [1]}))
    err = single_error(read_raw_until_pong(srv))
    assert_error(err, INVALID_REQUEST, '"params"', "object", id=3)
    assert_serving(srv)


def test_duplicate_in_flight_id_is_refused_and_first_completes(srv: ServerProcess) -> None:
    srv.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
              "params": {"name": "sleep", "arguments": {"seconds": 1}}})
    time.sleep(0.2)
    srv.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
              "params": {"name": "echo", "arguments": {"text": "impostor"}}})
    first = srv.recv()
    assert_error(first, INVALID_REQUEST, "7", "already in use", "new id", id=7)
    second = srv.wait_for(7)
    assert second["result"]["isError"] is False
    assert text_of(second) == "Slept 1 seconds."  # its own result, not the echo's
    assert_serving(srv)
    # Once answered, the id is free again.
    srv.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})
    assert srv.wait_for(7) == {"jsonrpc": "2.0", "id": 7, "result": {}}


# ---------------------------------------------------------------------------- lifecycle


@pytest.mark.parametrize("method,params", [
    ("tools/list", None),
    ("tools/call", {"name": "echo", "arguments": {"text": "x"}}),
    ("logging/setLevel", {"level": "debug"}),
])
def test_request_before_initialize_is_refused(raw: ServerProcess, method: str,
                                              params: Any) -> None:
    assert_error(raw.request(method, params), INVALID_REQUEST, "initialize", "first")
    assert raw.request("ping")["result"] == {}  # ping is allowed before initialize
    raw.initialize()
    assert_serving(raw)


def test_request_before_initialized_notification_is_refused(raw: ServerProcess) -> None:
    raw.initialize(initialized=False)
    assert_error(raw.request("tools/list"), INVALID_REQUEST, "notifications/initialized")
    assert ping_after(raw)[:-1] == []  # ping is allowed meanwhile
    raw.notify("notifications/initialized")
    assert "tools" in raw.request("tools/list")["result"]
    assert_serving(raw)


@pytest.mark.parametrize("initialized", [True, False])
def test_second_initialize_is_refused(raw: ServerProcess, initialized: bool) -> None:
    raw.initialize("2025-06-18", initialized=initialized)
    again = raw.request("initialize", {"protocolVersion": LATEST, "capabilities": {},
                                       "clientInfo": {"name": "again", "version": "1"}})
    assert_error(again, INVALID_REQUEST, "already initialized", "once")
    if not initialized:
        raw.notify("notifications/initialized")
    # The first handshake stands: in 2025-06-18 bad tool arguments are -32602, not isError.
    assert_error(call(raw, "add", {"a": "one", "b": 2}), INVALID_PARAMS, "integer")
    assert_serving(raw)


@pytest.mark.parametrize("params", [
    {},
    {"protocolVersion": 20251125, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
    {"protocolVersion": LATEST, "capabilities": [], "clientInfo": {"name": "x", "version": "1"}},
    {"protocolVersion": LATEST, "capabilities": {}},
], ids=["empty", "version-not-string", "capabilities-not-object", "no-client-info"])
def test_bad_initialize_params_then_retry(raw: ServerProcess, params: dict[str, Any]) -> None:
    assert_error(raw.request("initialize", params), INVALID_PARAMS, "initialize", "required")
    raw.initialize()
    assert_serving(raw)


@pytest.mark.parametrize("requested,expected", [
    *[(v, v) for v in ALL_VERSIONS],
    ("1999-01-01", LATEST),
    ("2026-07-28", LATEST),
])
def test_version_negotiation(raw: ServerProcess, requested: str, expected: str) -> None:
    result = raw.initialize(requested)
    assert result["protocolVersion"] == expected
    assert result["serverInfo"]["name"] == "mcpkit-everything"
    assert "tools" in result["capabilities"]
    # Listing everything validates the whole catalogue against that revision's schema.
    assert len(raw.request("tools/list")["result"]["tools"]) > 10
    assert raw.request("resources/list")["result"]["resources"]
    assert raw.request("prompts/list")["result"]["prompts"]
    assert_serving(raw)


def test_initialize_cannot_be_cancelled(raw: ServerProcess) -> None:
    init = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {"protocolVersion": LATEST, "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": "init", "reason": "changed my mind"}}
    raw.checker.saw_peer(init)  # type: ignore[union-attr]
    raw.send_raw(line(init) + line(cancel))  # one write: the cancel arrives with it
    res = raw.wait_for("init")
    assert res["result"]["protocolVersion"] == LATEST
    raw.notify("notifications/initialized")
    assert_serving(raw)


# ---------------------------------------------------------------------------- methods and tools


@pytest.mark.parametrize("method", ["tools/frobnicate", "sampling/createMessage",
                                    "elicitation/create", "roots/list"])
def test_unknown_method_is_method_not_found(srv: ServerProcess, method: str) -> None:
    assert_error(srv.request(method, {}), METHOD_NOT_FOUND, method)
    assert_serving(srv)


def test_method_missing_from_older_revision_is_method_not_found(raw: ServerProcess) -> None:
    raw.initialize("2025-06-18")
    assert_error(raw.request("tasks/list", {}), METHOD_NOT_FOUND, "tasks/list", "2025-06-18")
    assert_serving(raw)


def test_unknown_tool_is_invalid_params(srv: ServerProcess) -> None:
    resp = call(srv, "no_such_tool")
    assert_error(resp, INVALID_PARAMS, "no_such_tool", "tools/list", "echo")
    assert_serving(srv)


WHOLE = "Expected at arguments: an object with a (integer, required), b (integer, required)"


@pytest.mark.parametrize("arguments,words", [
    ({"a": "one", "b": 2}, ["a:", "integer", "Expected at a: an integer."]),
    ({"a": 1}, ["b", "required", WHOLE]),
    ({"a": 1, "b": 2, "c": 3}, ["c", "unexpected", WHOLE]),
], ids=["wrong-type", "missing", "extra"])
def test_schema_violating_arguments_latest_is_error_result(
        srv: ServerProcess, arguments: dict[str, Any], words: list[str]) -> None:
    """The problem, and what is expected where it is (the field, or the whole object)."""
    resp = call(srv, "add", arguments)
    assert resp["result"]["isError"] is True
    text = text_of(resp)
    for word in words:
        assert word in text, text
    assert_serving(srv)


@pytest.mark.parametrize("version", OLDER)
def test_schema_violating_arguments_older_is_invalid_params(raw: ServerProcess,
                                                            version: str) -> None:
    raw.initialize(version)
    resp = call(raw, "add", {"a": "one", "b": 2})
    assert_error(resp, INVALID_PARAMS, "add", "a:", "integer", "expected")
    assert text_of(call(raw, "add", {"a": 1, "b": 2})) == "3"
    assert_serving(raw)


def test_tool_raising_plain_exception_hides_details(toolbox: ServerProcess) -> None:
    resp = call(toolbox, "boom")
    assert resp["result"]["isError"] is True
    text = text_of(resp)
    assert "boom" in text and "try" in text
    assert "secret-token-123" not in json.dumps(resp)
    assert "Traceback" not in json.dumps(resp)
    assert_serving(toolbox)
    # The details went to the server's log (stderr), where the operator can see them.
    assert "secret-token-123" in toolbox.stderr()


def test_tool_printing_to_stdout_keeps_stdout_pure(toolbox: ServerProcess) -> None:
    for i in range(3):
        assert text_of(call(toolbox, "chatty", {"text": f"noise{i}"})) == "chatty done"
    assert_serving(toolbox)  # every line read so far was parsed as JSON by recv()
    assert after_close(toolbox) == []  # and nothing stray came after the last message
    err = toolbox.stderr()
    for i in range(3):
        for how in ("print", "sys.stdout", "fd1", "child"):
            assert f"{how}:noise{i}" in err, (how, err[-2000:])


# ---------------------------------------------------------------------------- cancellation


@pytest.mark.parametrize("same_write", [False, True], ids=["while-running", "same-write"])
def test_cancelled_slow_tool_gets_no_response(srv: ServerProcess, same_write: bool) -> None:
    req = {"jsonrpc": "2.0", "id": 30, "method": "tools/call",
           "params": {"name": "sleep", "arguments": {"seconds": 30}}}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": 30, "reason": "user pressed stop"}}
    srv.checker.saw_peer(req)  # type: ignore[union-attr]
    if same_write:
        srv.send_raw(line(req) + line(cancel))
    else:
        srv.send_raw(line(req))
        time.sleep(0.3)
        srv.send_raw(line(cancel))
    time.sleep(1.2)
    nothing_for(ping_after(srv), 30)
    assert_serving(srv)
    # The cancelled handler is gone: EOF ends the server at once (no waiting for it).
    start = time.monotonic()
    nothing_for(after_close(srv), 30)
    assert time.monotonic() - start < 3


@pytest.mark.parametrize("request_id", [12345, "nope", None])
def test_cancel_of_unknown_request_is_ignored(srv: ServerProcess, request_id: Any) -> None:
    srv.notify("notifications/cancelled", {"requestId": request_id})
    assert_serving(srv)


# ---------------------------------------------------------------------------- batches


def test_batch_accepted_in_2025_03_26(raw: ServerProcess) -> None:
    raw.initialize("2025-03-26")
    batch = [
        {"jsonrpc": "2.0", "id": "b1", "method": "ping"},
        {"jsonrpc": "2.0", "id": "b2", "method": "tools/call",
         "params": {"name": "echo", "arguments": {"text": "in a batch"}}},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "id": "b3", "method": "no/such/method"},
    ]
    raw.send(batch)
    answer = raw.recv()
    assert isinstance(answer, list) and len(answer) == 3, answer
    by_id = {m["id"]: m for m in answer}
    assert set(by_id) == {"b1", "b2", "b3"}
    assert by_id["b1"]["result"] == {}
    assert text_of(by_id["b2"]) == "in a batch"
    assert_error(by_id["b3"], METHOD_NOT_FOUND, "no/such/method")
    assert_serving(raw)


def test_empty_batch_is_invalid_request_in_2025_03_26(raw: ServerProcess) -> None:
    raw.initialize("2025-03-26")
    raw.send_raw(b"[]\n")
    assert_error(single_error(read_raw_until_pong(raw)), INVALID_REQUEST, "empty batch",
                 id=unreadable("2025-03-26"))
    assert_serving(raw)


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", LATEST])
def test_batch_refused_outside_2025_03_26(raw: ServerProcess, version: str) -> None:
    raw.initialize(version)
    raw.send_raw(line([{"jsonrpc": "2.0", "id": "b1", "method": "ping"},
                       {"jsonrpc": "2.0", "id": "b2", "method": "tools/list"}]))
    err = single_error(read_raw_until_pong(raw))  # nothing for b1/b2
    assert_error(err, INVALID_REQUEST, "batches are not supported", version,
                 "one message at a time", id=unreadable(version))
    assert_serving(raw)


# ---------------------------------------------------------------------------- progress


@pytest.mark.parametrize("token", ["tok-1", 42])
def test_progress_notifications_with_token(srv: ServerProcess, token: Any) -> None:
    resp = call(srv, "test_tool_with_progress", _meta={"progressToken": token})
    assert text_of(resp) == str(token)
    progress = [n for n in srv.notifications if n["method"] == "notifications/progress"]
    assert len(progress) == 3
    assert all(n["params"]["progressToken"] == token for n in progress)
    values = [n["params"]["progress"] for n in progress]
    assert values == sorted(set(values)), values  # strictly increasing
    assert values[-1] == 100 and all(n["params"]["total"] == 100 for n in progress)
    # All arrived before the response (wait_for collects notifications only until then).
    assert srv.received.index(resp) > max(srv.received.index(n) for n in progress)
    assert_serving(srv)
    assert len([n for n in srv.notifications if n["method"] == "notifications/progress"]) == 3


def test_no_progress_without_token(srv: ServerProcess) -> None:
    call(srv, "test_tool_with_progress")
    ping_after(srv)
    assert [n for n in srv.notifications if n["method"] == "notifications/progress"] == []


# ---------------------------------------------------------------------------- logging


@pytest.mark.parametrize("level", ["verbose", "", 3, None, "INFO"])
def test_bad_log_level_is_invalid_params(srv: ServerProcess, level: Any) -> None:
    resp = srv.request("logging/setLevel", {"level": level})
    assert_error(resp, INVALID_PARAMS, "log level", "debug", "emergency")
    assert_serving(srv)


@pytest.mark.parametrize("level", [[], {}], ids=["array", "object"])
def test_unhashable_log_level_is_invalid_params(srv: ServerProcess, level: Any) -> None:
    resp = srv.request("logging/setLevel", {"level": level})
    assert_error(resp, INVALID_PARAMS, "log level")
    assert_serving(srv)


@pytest.mark.parametrize("level,expected", [
    (None, 3), ("debug", 3), ("info", 3), ("warning", 0), ("error", 0),
])
def test_log_level_filters_tool_logging(srv: ServerProcess, level: str | None,
                                        expected: int) -> None:
    if level is not None:
        assert srv.request("logging/setLevel", {"level": level})["result"] == {}
    assert text_of(call(srv, "test_tool_with_logging")) == (
        "Tool with logging executed successfully")
    ping_after(srv)
    logs = [n for n in srv.notifications if n["method"] == "notifications/message"]
    assert len(logs) == expected
    assert all(n["params"]["level"] == "info" for n in logs)
    if expected:
        assert logs[0]["params"]["data"] == "Tool execution started"


# ---------------------------------------------------------------------------- resources


def test_subscribe_and_resource_updated(toolbox: ServerProcess) -> None:
    def updates() -> list[str]:
        return [n["params"]["uri"] for n in toolbox.notifications
                if n["method"] == "notifications/resources/updated"]

    assert toolbox.request("resources/subscribe", {"uri": "test://watched"})["result"] == {}
    call(toolbox, "touch", {"uri": "test://watched"})
    ping_after(toolbox)
    assert updates() == ["test://watched"]
    call(toolbox, "touch", {"uri": "test://other"})  # not subscribed: nothing
    ping_after(toolbox)
    assert updates() == ["test://watched"]
    assert toolbox.request("resources/unsubscribe", {"uri": "test://watched"})["result"] == {}
    call(toolbox, "touch", {"uri": "test://watched"})
    ping_after(toolbox)
    assert updates() == ["test://watched"]
    assert_error(toolbox.request("resources/subscribe", {"uri": "no scheme here"}),
                 INVALID_PARAMS, "uri", "absolute URI")
    assert_serving(toolbox)


def test_resource_updated_from_sync_tool_is_sent_at_once(toolbox: ServerProcess) -> None:
    """A synchronous tool (on a worker thread) reports an update: the notification goes
    out while the tool still runs, not when it returns."""
    assert toolbox.request("resources/subscribe", {"uri": "test://watched"})["result"] == {}
    start = time.monotonic()
    toolbox.send({"jsonrpc": "2.0", "id": "t", "method": "tools/call",
                  "params": {"name": "touch_and_block",
                             "arguments": {"uri": "test://watched", "seconds": 1.5}}})
    note = toolbox.recv()
    assert note == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                    "params": {"uri": "test://watched"}}
    assert time.monotonic() - start < 0.8
    assert text_of(toolbox.wait_for("t")) == "touched test://watched, then blocked 1.5s"
    assert_serving(toolbox)


def test_everything_watched_resource_updates(srv: ServerProcess) -> None:
    assert srv.request("resources/subscribe",
                       {"uri": "test://watched-resource"})["result"] == {}
    note = collect_until(srv, lambda m: m.get("method") == "notifications/resources/updated",
                         timeout=5)[-1]
    assert note["params"] == {"uri": "test://watched-resource"}
    contents = srv.request("resources/read", {"uri": "test://watched-resource"})
    assert "version 0" not in contents["result"]["contents"][0]["text"]
    assert_serving(srv)


def test_tool_added_at_runtime_sends_list_changed(toolbox: ServerProcess) -> None:
    before = {t["name"] for t in toolbox.request("tools/list")["result"]["tools"]}
    assert "dyn_tool" not in before
    assert text_of(call(toolbox, "grow", {"name": "dyn_tool"})) == "registered dyn_tool"
    ping_after(toolbox)
    assert [n for n in toolbox.notifications
            if n["method"] == "notifications/tools/list_changed"] != []
    after = {t["name"] for t in toolbox.request("tools/list")["result"]["tools"]}
    assert after == before | {"dyn_tool"}
    assert text_of(call(toolbox, "dyn_tool")) == "I am dyn_tool"
    assert_serving(toolbox)


@pytest.mark.parametrize("uri,words", [
    ("test://template/..%2F..%2Fetc/data", ["not allowed", ".."]),
    ("test://template/%2e%2e/data", ["not allowed", ".."]),
    ("test://template/%2E/data", ["not allowed"]),
    ("test://template/a%00b/data", ["not allowed"]),
    ("test://template/%5c/data", ["not allowed"]),
    ("test://template/%ff/data", ["not allowed"]),
    ("test://template/a b/data", ["without spaces or control characters"]),
    ("test://template/a\x01b/data", ["without spaces or control characters"]),
    ("test://static-text\n", ["without spaces or control characters"]),
    ("no-scheme/at/all", ["absolute URI"]),
    ("", ["uri", "required"]),
    (42, ["uri", "string"]),
    (None, ["uri", "string"]),
    (["test://static-text"], ["uri", "string"]),
    ("test://template/" + "a" * 100_000 + "/data", ["too long", "8192"]),
], ids=["encoded-slash-traversal", "encoded-dotdot", "encoded-dot", "nul", "backslash",
        "bad-utf8", "space", "control-char", "newline", "no-scheme", "empty", "int", "null",
        "list", "100kB"])
def test_hostile_resource_uri_is_invalid_params(srv: ServerProcess, uri: Any,
                                                words: list[str]) -> None:
    resp = srv.request("resources/read", {"uri": uri})
    assert_error(resp, INVALID_PARAMS, *words)
    assert len(json.dumps(resp)) < 2000  # the hostile URI is not echoed back in full
    ok = srv.request("resources/read", {"uri": "test://template/42/data"})
    assert json.loads(ok["result"]["contents"][0]["text"])["id"] == "42"
    assert_serving(srv)


@pytest.mark.parametrize("version", ["2024-11-05", LATEST])
def test_unknown_resource_is_resource_not_found(raw: ServerProcess, version: str) -> None:
    raw.initialize(version)
    resp = raw.request("resources/read", {"uri": "test://does-not-exist"})
    assert_error(resp, RESOURCE_NOT_FOUND, "test://does-not-exist", "resources/list")
    assert resp["error"]["data"] == {"uri": "test://does-not-exist"}
    assert_serving(raw)


# ---------------------------------------------------------------------------- pagination


def _cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize("cursor", [
    "garbage!", "", 123, "x" * 100, _cursor("mcpkit:999999"), _cursor("other:1"),
    _cursor("mcpkit:-1"),
], ids=["garbage", "empty", "int", "long", "past-end", "foreign", "negative"])
def test_invalid_cursor_is_invalid_params(srv: ServerProcess, cursor: Any) -> None:
    assert_error(srv.request("tools/list", {"cursor": cursor}), INVALID_PARAMS, "cursor",
                 "without a cursor")
    assert_serving(srv)


@pytest.mark.parametrize("method", ["resources/list", "resources/templates/list",
                                    "prompts/list"])
def test_invalid_cursor_on_other_lists(srv: ServerProcess, method: str) -> None:
    assert_error(srv.request(method, {"cursor": "bogus"}), INVALID_PARAMS, "cursor")
    assert_serving(srv)


def test_pagination_walks_every_tool_once() -> None:
    with ServerProcess(TOOLBOX, env={"MCPKIT_TEST_PAGE_SIZE": "2"}) as s:
        s.initialize()
        names: list[str] = []
        cursor = None
        pages = 0
        while True:
            res = s.request("tools/list", {"cursor": cursor} if cursor else {})["result"]
            assert len(res["tools"]) <= 2
            names += [t["name"] for t in res["tools"]]
            pages += 1
            cursor = res.get("nextCursor")
            if cursor is None:
                break
        assert pages >= 3
        assert sorted(names) == sorted(set(names))
        assert {"echo", "chatty", "boom", "block", "grow", "touch"} <= set(names)
        assert_serving(s)


# ---------------------------------------------------------------------------- concurrency


def test_blocking_sync_tool_does_not_block_the_event_loop(toolbox: ServerProcess) -> None:
    start = time.monotonic()
    toolbox.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                  "params": {"name": "block", "arguments": {"seconds": 1.0}}})
    time.sleep(0.1)
    toolbox.send({"jsonrpc": "2.0", "id": "fast", "method": "ping"})
    first = toolbox.recv()
    assert first == {"jsonrpc": "2.0", "id": "fast", "result": {}}
    assert time.monotonic() - start < 0.6  # answered while the tool still blocks
    slow = toolbox.wait_for("slow")
    assert time.monotonic() - start >= 0.9
    assert text_of(slow) == "blocked 1.0s"
    assert_serving(toolbox)


def test_blocking_sync_tools_run_in_parallel(toolbox: ServerProcess) -> None:
    start = time.monotonic()
    for rid in ("s1", "s2", "s3"):
        toolbox.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                      "params": {"name": "block", "arguments": {"seconds": 1.0}}})
    got = {m["id"] for m in (toolbox.recv(), toolbox.recv(), toolbox.recv())}
    assert got == {"s1", "s2", "s3"}
    assert time.monotonic() - start < 2.0
    assert_serving(toolbox)


# ---------------------------------------------------------------------------- lifespan, exit


def test_lifespan_entered_once_and_cleaned_up(tmp_path: Path) -> None:
    marker = tmp_path / "lifespan.log"
    with ServerProcess(TOOLBOX, env={"MCPKIT_TEST_LIFESPAN_MARKER": str(marker)}) as s:
        s.initialize()
        for _ in range(3):
            assert text_of(call(s, "lifespan_state")) == "hello from the lifespan"
        assert_serving(s)
        pid = s.proc.pid
        assert marker.read_text().splitlines() == [f"enter {pid}"]
        assert s.close() == 0
    assert marker.read_text().splitlines() == [f"enter {pid}", f"exit {pid}"]


@pytest.mark.parametrize("script", [None, TOOLBOX], ids=["everything", "toolbox"])
@pytest.mark.parametrize("initialized", [True, False])
def test_clean_exit_on_stdin_eof(script: Path | None, initialized: bool) -> None:
    with ServerProcess(*([script] if script else [])) as s:
        if initialized:
            s.initialize()
            assert_serving(s)
        start = time.monotonic()
        assert s.close() == 0
        assert time.monotonic() - start < 3  # ended by EOF, not by SIGTERM
        assert "Traceback" not in s.stderr()


@pytest.mark.parametrize("stdin_kind", ["file", "pipe"])
def test_stdout_to_a_regular_file_loses_nothing(tmp_path: Path, stdin_kind: str) -> None:
    """``server < requests.jsonl > out.jsonl``: every answer reaches the file, including
    those of handlers still running when the input ended."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": LATEST, "capabilities": {},
                    "clientInfo": {"name": "file", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "echo", "arguments": {"text": "hi"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "sleep", "arguments": {"seconds": 0.3}}},
        {"jsonrpc": "2.0", "id": 5, "method": "ping"},
    ]
    data = b"".join(line(m) for m in requests) + b"not json\n"
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    out = tmp_path / "out.jsonl"
    with out.open("wb") as sink, src.open("rb") as source:
        proc = subprocess.run(
            [sys.executable, str(EVERYTHING)], stdout=sink, stderr=subprocess.PIPE,
            timeout=10, **({"stdin": source} if stdin_kind == "file" else {"input": data}))
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    checker = WireChecker("server")
    for m in requests:
        checker.saw_peer(m)
    msgs = [json.loads(raw_line) for raw_line in out.read_bytes().splitlines()]
    for m in msgs:
        checker.check(m)
    assert sorted(m["id"] for m in msgs if "id" in m) == [1, 2, 3, 4, 5]
    by_id = {m["id"]: m for m in msgs if "id" in m}
    assert text_of(by_id[3]) == "hi"
    assert text_of(by_id[4]) == "Slept 0.3 seconds."
    assert_error(single_error([m for m in msgs if "id" not in m]), PARSE_ERROR, "JSON")


def test_eof_with_request_in_flight_still_answers(srv: ServerProcess) -> None:
    srv.send({"jsonrpc": "2.0", "id": "late", "method": "tools/call",
              "params": {"name": "sleep", "arguments": {"seconds": 0.5}}})
    time.sleep(0.1)
    assert srv.proc.stdin is not None
    srv.proc.stdin.close()
    assert text_of(srv.wait_for("late")) == "Slept 0.5 seconds."
    assert srv.proc.wait(5) == 0


# ---------------------------------------------------------------------------- server -> client


def _server_request(s: ServerProcess, method: str) -> dict[str, Any]:
    msg = collect_until(s, lambda m: "id" in m and m.get("method") is not None)[-1]
    assert msg["method"] == method, msg
    return msg


def test_sampling_round_trip(raw: ServerProcess) -> None:
    raw.initialize(capabilities={"sampling": {}})
    raw.send({"jsonrpc": "2.0", "id": "t", "method": "tools/call",
              "params": {"name": "test_sampling", "arguments": {"prompt": "What is 2+2?"}}})
    req = _server_request(raw, "sampling/createMessage")
    assert req["params"]["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "What is 2+2?"}}]
    assert req["params"]["maxTokens"] == 100
    raw.respond(req["id"], {"role": "assistant", "content": {"type": "text", "text": "4"},
                            "model": "test-model", "stopReason": "endTurn"})
    resp = raw.wait_for("t")
    assert resp["result"]["isError"] is False
    assert text_of(resp) == "LLM response: 4"
    assert_serving(raw)


@pytest.mark.parametrize("version", ["2025-06-18", LATEST])
@pytest.mark.parametrize("answer,expected", [
    ({"action": "accept", "content": {"response": "yes"}},
     "User response: action=accept, content={'response': 'yes'}"),
    ({"action": "decline"}, "User response: action=decline, content={}"),
])
def test_elicitation_round_trip(raw: ServerProcess, version: str, answer: dict[str, Any],
                                expected: str) -> None:
    raw.initialize(version, capabilities={"elicitation": {}})
    raw.send({"jsonrpc": "2.0", "id": "t", "method": "tools/call",
              "params": {"name": "test_elicitation", "arguments": {"message": "Proceed?"}}})
    req = _server_request(raw, "elicitation/create")
    assert req["params"]["message"] == "Proceed?"
    assert req["params"]["requestedSchema"]["required"] == ["response"]
    assert ("mode" in req["params"]) == (version == LATEST)
    raw.respond(req["id"], answer)
    assert text_of(raw.wait_for("t")) == expected
    assert_serving(raw)


@pytest.mark.parametrize("version,capabilities,tool,words", [
    (LATEST, {}, "test_sampling", ["'sampling' capability"]),
    (LATEST, {"elicitation": {}}, "test_sampling", ["'sampling' capability"]),
    (LATEST, {"sampling": {}}, "test_elicitation", ["'elicitation' capability"]),
    ("2025-03-26", {"sampling": {}, "elicitation": {}}, "test_elicitation",
     ["'elicitation/create'", "2025-03-26"]),
], ids=["no-caps", "other-cap", "no-elicitation", "elicitation-not-in-revision"])
def test_server_request_without_client_support_is_error_result(
        raw: ServerProcess, version: str, capabilities: dict[str, Any], tool: str,
        words: list[str]) -> None:
    raw.initialize(version, capabilities=capabilities)
    resp = call(raw, tool, {"prompt": "hi"} if tool == "test_sampling" else {"message": "hi"})
    assert resp["result"]["isError"] is True
    text = text_of(resp)
    for word in words:
        assert word in text, text  # says what is missing, not just "failed unexpectedly"
    ping_after(raw)
    assert raw.requests == []  # nothing was sent to a client that cannot take it
    assert not any("method" in m and "id" in m for m in raw.received)
    assert_serving(raw)


def test_client_error_answer_to_sampling_is_error_result(raw: ServerProcess) -> None:
    raw.initialize(capabilities={"sampling": {}})
    raw.send({"jsonrpc": "2.0", "id": "t", "method": "tools/call",
              "params": {"name": "test_sampling", "arguments": {"prompt": "hi"}}})
    req = _server_request(raw, "sampling/createMessage")
    raw.send({"jsonrpc": "2.0", "id": req["id"],
              "error": {"code": -1, "message": "User rejected sampling request"}})
    resp = raw.wait_for("t")
    assert resp["result"]["isError"] is True
    assert "test_sampling" in text_of(resp) and "try" in text_of(resp)
    assert "Traceback" not in text_of(resp)
    assert_serving(raw)


def test_cancelling_tool_cancels_its_pending_sampling_request(raw: ServerProcess) -> None:
    raw.initialize(capabilities={"sampling": {}})
    raw.send({"jsonrpc": "2.0", "id": "t", "method": "tools/call",
              "params": {"name": "test_sampling", "arguments": {"prompt": "hi"}}})
    req = _server_request(raw, "sampling/createMessage")
    raw.notify("notifications/cancelled", {"requestId": "t", "reason": "stop"})
    note = collect_until(raw, lambda m: m.get("method") == "notifications/cancelled")[-1]
    assert note["params"]["requestId"] == req["id"]
    assert note["params"].get("reason") != "timed out", note  # it was cancelled, not timed out
    # A late answer to the cancelled sampling request is ignored.
    raw.respond(req["id"], {"role": "assistant", "content": {"type": "text", "text": "late"},
                            "model": "m"})
    time.sleep(0.3)
    nothing_for(ping_after(raw), "t")
    assert_serving(raw)
