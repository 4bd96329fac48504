"""The stdio channel: the server under test as a subprocess, messages as lines.

:class:`StdioChannel` runs the server through
:class:`~mcpkit.transports.process.ProcessStream` (which owns the shutdown order), writes
requests to its stdin and reads its stdout line by line, recording every message in the
:class:`~mcpkit.check.wire.WireLog`. A broken server must still be judged, not lost: a
message pretty-printed over several lines (an M015 defect) is joined until it parses, and
several messages on one line (an M014 defect) are split, each kept as evidence. A dead
server answers nothing, so no wait outlives it.
"""

from __future__ import annotations

import json
import shlex
import tempfile
from collections.abc import Sequence
from typing import IO, Any

import anyio
import orjson
from anyio.abc import TaskGroup

from ...transports.process import ProcessStream
from . import MAX_LINE, Channel, Reply, WireLog, dump, id_key


class StdioChannel(Channel):
    """One server process; messages are lines on its stdin and stdout."""

    transport = "stdio"

    def __init__(
        self, command: Sequence[str], log: WireLog, label: str, timeout: float,
        env: dict[str, str] | None = None, cwd: str | None = None,
    ) -> None:
        super().__init__(log, label, timeout)
        self.command = list(command)
        self.env = env
        self.cwd = cwd
        self._proc: ProcessStream | None = None
        self._stderr: IO[bytes] | None = None
        self._tg: TaskGroup | None = None
        self._waiters: dict[Any, anyio.Event] = {}
        self._answers: dict[Any, Any] = {}
        self._orphans: list[Any] = []
        self._orphan_event = anyio.Event()
        self._eof = anyio.Event()
        self._pending_text = b""
        self._pending_lines = 0
        self.start_error: str | None = None

    async def __aenter__(self) -> StdioChannel:
        self._stderr = tempfile.TemporaryFile()
        try:
            self._proc = await ProcessStream.open(
                self.command, env=self.env, cwd=self.cwd, stderr=self._stderr, grace=1.0
            )
        except OSError as exc:
            self.start_error = f"cannot start {shlex.join(self.command)}: {exc}"
            self._eof.set()
            return self
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._reader)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._proc is not None:
            await self._proc.aclose()
        if self._tg is not None:
            self._tg.cancel_scope.cancel()
            await self._tg.__aexit__(None, None, None)
            self._tg = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def stderr_tail(self, limit: int = 600) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0, 2)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - limit))
        return self._stderr.read().decode("utf-8", "replace")

    async def _reader(self) -> None:
        assert self._proc is not None
        buf = b""
        try:
            while True:
                chunk = await self._proc.receive()
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    await self._line(line)
                if len(buf) > MAX_LINE:
                    self.log.bad_lines.append(
                        (self.label, f"(a line longer than {MAX_LINE} bytes, dropped)"))
                    buf = b""
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            if buf.strip():
                await self._line(buf)
        finally:
            self._eof.set()
            for ev in self._waiters.values():
                ev.set()
            self._orphan_event.set()

    async def _line(self, line: bytes) -> None:
        text = line.rstrip(b"\r")
        if not text.strip():
            return
        if self._pending_text:
            # A message pretty-printed over several lines (an M015 defect): keep joining
            # lines until they parse, so the messages themselves are not lost.
            self._pending_text += b"\n" + text
            self._pending_lines += 1
            try:
                msg = orjson.loads(self._pending_text)
            except orjson.JSONDecodeError:
                if len(self._pending_text) > 1_000_000 or self._pending_lines > 200:
                    self.log.bad_lines.append((self.label, dump(self._pending_text[:2000])))
                    self._pending_text = b""
                return
            joined, self._pending_text = self._pending_text, b""
            self.log.bad_lines.append((self.label, "MULTILINE:" + dump(joined[:2000])))
            await self._dispatch(msg, joined)
            return
        try:
            msg = orjson.loads(text)
        except orjson.JSONDecodeError:
            several = _split_values(text)
            if several is not None:  # several messages on one line (an M014 defect)
                self.log.bad_lines.append((self.label, "JOINED:" + dump(text[:2000])))
                for value in several:
                    await self._dispatch(value, orjson.dumps(value))
                return
            if text.lstrip()[:1] in (b"{", b"["):
                self._pending_text = text
                self._pending_lines = 1
                return
            self.log.bad_lines.append((self.label, dump(text[:2000])))
            return
        await self._dispatch(msg, text)

    async def _dispatch(self, msg: Any, raw: bytes) -> None:
        self._record(msg, raw.decode("utf-8", "backslashreplace"), "stdout")
        if isinstance(msg, list):
            if msg and all(isinstance(m, dict) and "method" not in m for m in msg):
                self._orphans.append(msg)  # a batch response answers a raw batch we sent
                self._orphan_event.set()
                return
            for item in msg:
                await self._dispatch_one(item)
            return
        await self._dispatch_one(msg)

    async def _dispatch_one(self, msg: Any) -> None:
        if not isinstance(msg, dict):
            return
        if "method" in msg:
            if "id" in msg:
                await self._write(self._answer_for(msg))
            return
        rid = msg.get("id")
        key = id_key(rid)
        if key in self._waiters and key not in self._answers:
            self._answers[key] = msg
            self._waiters[key].set()
        else:
            self._orphans.append(msg)
            self._orphan_event.set()

    async def _write(self, msg: Any) -> None:
        data = msg if isinstance(msg, bytes) else orjson.dumps(msg) + b"\n"
        if self._proc is None or self._eof.is_set():
            return
        try:
            await self._proc.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass

    def _others_since(self, start: int) -> list[Any]:
        return [
            r.msg for r in self.log.received[start:]
            if r.channel == self.label and isinstance(r.msg, dict) and "method" in r.msg
        ]

    async def request(
        self, method: str, params: Any = None, *, id: Any = None, timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        msg = self.make_request(method, params, id)
        return await self.exchange(msg, timeout=timeout)

    async def exchange(self, msg: dict[str, Any], *, timeout: float | None = None) -> Reply:
        """Send one request object and wait for the response carrying its id."""
        reply = Reply(sent=msg, transcript=[f"→ {dump(msg)}"])
        if self.start_error:
            reply.transcript.append(f"(server not running: {self.start_error})")
            reply.timed_out = True
            return reply
        key = id_key(msg.get("id"))
        ev = anyio.Event()
        self._waiters[key] = ev
        self._answers.pop(key, None)
        start = len(self.log.received)
        await self._write(msg)
        with anyio.move_on_after(timeout if timeout is not None else self.timeout):
            if not self._eof.is_set():  # a dead server answers nothing: do not wait
                await ev.wait()
        self._waiters.pop(key, None)
        reply.msg = self._answers.pop(key, None)
        reply.others = self._others_since(start)
        for other in reply.others:
            reply.transcript.append(f"← {dump(other)}")
        if reply.msg is not None:
            reply.transcript.append(f"← {dump(reply.msg)}")
        else:
            reply.timed_out = True
            if self._eof.is_set():
                reply.transcript.append(f"(server closed stdout; stderr: {self.stderr_tail()!r})")
        return reply

    async def notify(self, method: str, params: Any = None) -> Reply:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        await self._write(msg)
        return Reply(sent=msg, transcript=[f"→ {dump(msg)}"])

    async def send_raw(
        self, data: bytes, *, wait: float | None = None, fence: dict[str, Any] | None = None
    ) -> Reply:
        """Write ``data`` (one line) and wait for a response no request of ours waits for.

        With ``fence`` (a harmless request sent right after), a server that answers the
        fence but not ``data`` is taken to have dropped ``data`` after a short grace, instead
        of waiting out the whole timeout: servers answer their stdin in order.
        """
        self.log.sent(self.label, data)
        shown = dump(data.rstrip(b"\n"))
        reply = Reply(sent=data, transcript=[f"→ {shown}"])
        self._orphans.clear()
        self._orphan_event = anyio.Event()
        start = len(self.log.received)
        await self._write(data if data.endswith(b"\n") else data + b"\n")
        limit = wait if wait is not None else self.timeout
        if fence is not None and not self._eof.is_set():
            fenced = await self.exchange(fence, timeout=limit)
            if not self._orphans and fenced.msg is not None:
                limit = 0.2
            reply.transcript.append(f"(then {fenced.transcript[0][2:]}: "
                                    f"{'answered' if fenced.msg is not None else 'no answer'})")
        with anyio.move_on_after(limit):
            await self._orphan_event.wait()
        reply.others = self._others_since(start)
        if self._orphans:
            reply.msg = self._orphans[0]
            reply.transcript.insert(1, f"← {dump(reply.msg)}")
        else:
            reply.timed_out = True
            if limit == 0.2:
                reply.transcript.append("(no answer to the first message, while the request "
                                        "after it was answered: the server dropped it)")
                reply.timed_out = False
        return reply

    async def wait_orphan(self, seconds: float) -> Reply:
        """Wait up to ``seconds`` for a response no request of ours is waiting for."""
        reply = Reply(sent=None)
        self._orphans.clear()
        self._orphan_event = anyio.Event()
        with anyio.move_on_after(seconds):
            await self._orphan_event.wait()
        if self._orphans:
            reply.msg = self._orphans[0]
            reply.transcript.append(f"← {dump(reply.msg)}")
        return reply

    async def quiet(self, seconds: float) -> list[Any]:
        """Wait ``seconds`` and return what the server sent meanwhile (unsolicited)."""
        start = len(self.log.received)
        await anyio.sleep(seconds)
        return [r.msg for r in self.log.received[start:] if r.channel == self.label]


def _split_values(text: bytes) -> list[Any] | None:
    """Two or more JSON values written back to back on one line, else ``None``."""
    decoder = json.JSONDecoder()
    source = text.decode("utf-8", "replace").strip()
    values, pos = [], 0
    try:
        while pos < len(source):
            value, end = decoder.raw_decode(source, pos)
            values.append(value)
            pos = end
            while pos < len(source) and source[pos] in " \t":
                pos += 1
    except json.JSONDecodeError:
        return None
    return values if len(values) > 1 else None
