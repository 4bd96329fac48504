"""The audit hook (``Server(audit=...)``, ``mcpkit.server.audit``): one record per
``tools/call``.

Real parts only: calls go through the in-process ``Client`` of each era (and, for the
stdio and HTTP transports, tests/test_limits.py and tests/auth/test_server_limits.py).
Covered: every outcome (ok, error, invalid — unknown tool, bad arguments in both the
protocol-error and the isError revisions —, rate_limited, cancelled, input_required),
the fields of a record, arguments absent by default and present when configured, a
raising hook logged without touching the answer, the JSON-lines ``AuditLog`` and the
record's immutability.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import anyio
import pytest

from mcpkit import AuditLog, AuditRecord, Context, RequestTimeout, Server, ToolError
from mcpkit.client import Client

pytestmark = pytest.mark.anyio
LIMIT = 10
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def make_server(records: list[AuditRecord], **options: Any) -> tuple[Server, anyio.Event]:
    """A server auditing into ``records``; ``hang`` waits for the returned event."""
    started = anyio.Event()
    server = Server("audited", audit=records.append, **options)

    @server.tool
    async def add(a: int, b: int) -> int:
        """Never waits."""
        return a + b

    @server.tool
    async def refuse(reason: str) -> str:
        """Fails for the model."""
        raise ToolError(f"refused: {reason}")

    @server.tool
    async def hang() -> str:
        """Waits until cancelled."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    @server.tool
    async def confirm(ctx: Context) -> str:
        """Asks the user: an MRTR round trip in 2026-07-28."""
        answer = await ctx.elicit("Sure?", SCHEMA, key="sure")
        return f"said {answer.content}"

    @server.tool(rate_limit="1/hour")
    async def once() -> str:
        """One call an hour."""
        return "done"

    return server, started


class Records(list[AuditRecord]):
    """An audit hook's records; ``reached(n)`` waits until there are ``n``."""

    def __init__(self) -> None:
        super().__init__()
        self.grew = anyio.Event()

    def append(self, record: AuditRecord) -> None:
        super().append(record)
        self.grew.set()

    async def reached(self, count: int) -> None:
        with anyio.fail_after(5):
            while len(self) < count:
                self.grew = anyio.Event()
                await self.grew.wait()


async def test_a_record_per_call_with_each_outcome() -> None:
    records = Records()
    server, started = make_server(records)
    before = time.time()
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {
                "result": 3}
            assert (await client.call_tool("refuse", {"reason": "no"})).is_error
            with pytest.raises(Exception, match="Unknown tool"):
                await client.call_tool("nope", {"secret": "s3cret"})
            assert (await client.call_tool("add", {"a": "x", "b": 2})).is_error
            assert not (await client.call_tool("once")).is_error
            assert (await client.call_tool("once")).is_error
            with pytest.raises(RequestTimeout):
                await client.call_tool("hang", timeout=0.2)
            assert started.is_set()
            await records.reached(7)
    assert [(r.tool, r.outcome) for r in records] == [
        ("add", "ok"), ("refuse", "error"), ("nope", "invalid"), ("add", "invalid"),
        ("once", "ok"), ("once", "rate_limited"), ("hang", "cancelled")]
    for record in records:
        assert before <= record.time <= time.time()
        assert 0 <= record.duration < LIMIT
        assert record.arguments is None
        assert record.protocol_version == "2025-11-25"
        assert (record.identity, record.subject, record.client_id, record.address) == (
            None, None, None, None)
        assert "s3cret" not in repr(record) and "s3cret" not in json.dumps(record.as_dict())
    assert records[-1].duration >= 0.15  # cancelled after the client's 0.2 s timeout
    ids = [r.request_id for r in records]
    assert len(set(ids)) == len(ids) and all(isinstance(i, int) for i in ids)


async def test_bad_arguments_are_invalid_also_where_they_are_a_protocol_error() -> None:
    records: list[AuditRecord] = []
    server, _ = make_server(records)
    with anyio.fail_after(LIMIT):
        async with Client(server, protocol_version="2025-06-18",
                          versions=["2025-06-18"]) as client:
            with pytest.raises(Exception, match="Invalid arguments"):
                await client.call_tool("add", {"a": "x", "b": 2})
            with pytest.raises(Exception, match="must be an object"):
                await client.request("tools/call", {"name": "add", "arguments": [1]})
            with pytest.raises(Exception, match="needs 'name'"):
                await client.request("tools/call", {"arguments": {}})
    assert [(r.tool, r.outcome) for r in records] == [
        ("add", "invalid"), ("add", "invalid"), ("", "invalid")]


async def test_arguments_are_recorded_only_when_configured() -> None:
    records: list[AuditRecord] = []
    server, _ = make_server(records, audit_arguments=True)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            await client.call_tool("add", {"a": 1, "b": 2})
            with pytest.raises(Exception, match="Unknown tool"):
                await client.call_tool("nope", {"x": [1, 2]})
    assert [r.arguments for r in records] == [{"a": 1, "b": 2}, {"x": [1, 2]}]
    assert records[0].as_dict()["arguments"] == {"a": 1, "b": 2}


async def test_stateless_calls_and_their_input_rounds_are_audited() -> None:
    records: list[AuditRecord] = []
    server, _ = make_server(records)

    async def accept(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"ok": True}}

    with anyio.fail_after(LIMIT):
        async with Client(server, mode="stateless", elicitation=accept) as client:
            assert (await client.call_tool("add", {"a": 2, "b": 2})).structured_content == {
                "result": 4}
            res = await client.call_tool("confirm")
            assert res.text == "said {'ok': True}"
    assert [(r.tool, r.outcome, r.protocol_version) for r in records] == [
        ("add", "ok", "2026-07-28"), ("confirm", "input_required", "2026-07-28"),
        ("confirm", "ok", "2026-07-28")]


async def test_a_raising_hook_is_logged_and_never_breaks_the_call(
        caplog: pytest.LogCaptureFixture) -> None:
    seen: list[AuditRecord] = []

    def broken(record: AuditRecord) -> None:
        seen.append(record)
        raise RuntimeError("disk full")

    server = Server("broken-audit", audit=broken)

    @server.tool
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    async def slow(a: int) -> int:
        await anyio.lowlevel.checkpoint()
        return a

    with caplog.at_level(logging.ERROR, logger="mcpkit.server"):
        with anyio.fail_after(LIMIT):
            async with Client(server) as client:
                assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {
                    "result": 2}
                assert (await client.call_tool("slow", {"a": 7})).structured_content == {
                    "result": 7}
    assert [r.tool for r in seen] == ["add", "slow"]
    failures = [r for r in caplog.records if "audit hook raised" in r.getMessage()]
    assert len(failures) == 2 and all(r.exc_info for r in failures)
    assert "'add'" in failures[0].getMessage()


async def test_audit_log_writes_one_json_line_per_call(
        caplog: pytest.LogCaptureFixture) -> None:
    server = Server("json-audit", audit=AuditLog("tests.audit"), audit_arguments=True)

    @server.tool
    async def add(a: int, b: int) -> int:
        return a + b

    with caplog.at_level(logging.INFO, logger="tests.audit"):
        with anyio.fail_after(LIMIT):
            async with Client(server) as client:
                await client.call_tool("add", {"a": 1, "b": 2})
    (line,) = [r.getMessage() for r in caplog.records if r.name == "tests.audit"]
    record = json.loads(line)
    assert list(record) == sorted(record)
    assert {k: record[k] for k in ("tool", "outcome", "arguments", "identity", "address")} == {
        "tool": "add", "outcome": "ok", "arguments": {"a": 1, "b": 2}, "identity": None,
        "address": None}


def test_audit_log_below_its_level_does_no_work() -> None:
    logger = logging.getLogger("tests.audit.quiet")
    logger.setLevel(logging.WARNING)
    record = AuditRecord(time=0.0, tool="t", outcome="ok", duration=0.0,
                         arguments={"x": object()})
    AuditLog(logger)(record)  # would fail to serialize if it were written


def test_a_record_is_immutable_and_equal_by_value() -> None:
    record = AuditRecord(time=1.0, tool="t", outcome="ok", duration=0.5, request_id=3)
    with pytest.raises(AttributeError, match="immutable"):
        record.outcome = "error"  # type: ignore[misc]
    assert record == AuditRecord(time=1.0, tool="t", outcome="ok", duration=0.5,
                                 request_id=3)
    assert "arguments" not in record.as_dict()
