"""Writing a stream as SSE, and resuming one with ``GET`` + ``Last-Event-ID``.

``write_sse`` sends a stream's events (after those replayed) until its final event, the
client's departure or the session's end. ``resume`` first checks that the id is one of
this session's events (400 otherwise), attaches to the stream if it is live here (so
nothing stored from then on is missed), then replays what the client missed.

With a shared event store (Redis, ``follow``) a client resumes on whichever instance it
reaches. A request stream live on another instance is *followed*: its events are read
from the store as that instance stores them, until its final event (the response), the
client's departure, or ``idle`` seconds without an event. A standalone GET stream of
another instance is taken over: it becomes this instance's GET stream, under the same
stream id, and the session's later messages come here (see ``http_shared``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import orjson

from ..protocol.sse import encode_event
from ..storage.faults import StoreUnavailable
from .asgi import SSE_HEADERS, DisconnectWatch, Receive, Refused, Send
from .http_drain import refusal
from .http_session import HttpSession, is_answer
from .http_stalls import MAX_STREAM_BUFFER, Sender, Stalls
from .http_streams import STREAM_END, Listener, ResponseStream


async def write_sse(stream: ResponseStream, listener: Listener, send: Send, receive: Receive,
                    retry_ms: int, skip_through: int | None,
                    replay: list[tuple[str, bytes]] | None = None,
                    stalls: Stalls | None = None) -> None:
    """Answer with ``stream`` as SSE: ``replay`` first, then what ``listener`` gets, until
    the final event, the end of the stream (the response is completed), the client's
    departure, or a reader so far behind that ``listener`` overflowed (the response is
    completed after what was taken; the client resumes from its last event id). Writes
    are watched by ``stalls`` (a reader stuck past its timeout is cut)."""
    sender = stalls.guard(send, receive) if stalls is not None else send
    await sender({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
    first = True
    with DisconnectWatch(receive, listener.leave):  # leave: gone, its writer woken
        try:
            for event_id, data in replay or ():
                if data and data != STREAM_END:
                    await sender({"type": "http.response.body", "body": encode_event(
                        data, event_id), "more_body": True})
            done = stream.done and stream.finished.is_set() and not listener.items
            while not done and not listener.gone:
                items = await listener.take()
                if listener.gone:
                    break
                done = (listener.ended or listener.overflowed) and not items
                for event_id, data, final in items:
                    if skip_through is not None and event_id and (
                            int(event_id.rpartition("_")[2]) <= skip_through):
                        listener.sent(len(data))  # (replayed already: the answer too, maybe)
                        done = done or final
                        continue
                    chunk = encode_event(data, event_id or None,  # "": not stored
                                         retry_ms if first else None)
                    first = False
                    await sender({"type": "http.response.body", "body": chunk,
                                  "more_body": True})
                    listener.sent(len(data))
                    if final:
                        done = True
            if not listener.gone:
                await sender({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the client went away; the stream keeps storing for resumption
        finally:
            if stream.listener is listener:
                stream.listener = None
            if isinstance(sender, Sender) and stalls is not None:
                stalls.release(sender)


async def resume(session: HttpSession, last: str, send: Send, receive: Receive,
                 retry_ms: int, idle: float, stalls: Stalls | None = None,
                 limit: int = MAX_STREAM_BUFFER, stop: Callable[[], bool] = bool) -> None:
    """Serve ``GET`` + ``Last-Event-ID: last`` (see the module docstring); following
    another instance's stream ends once ``stop()`` (the server drains)."""
    store = session.store
    if await store.replay(session.session_id, last) is None:  # before touching a stream
        raise Refused(400, "Bad request: Last-Event-ID is not an event of this session; "
                           "open a new stream without it.")
    if stop():  # the drain began while the store was read: it has ended the streams it
        raise refusal()  # knew of and would never end this one (resume it elsewhere)
    stream_id = last.rpartition("_")[0]
    live = session.resumable.get(stream_id)
    reopen = False
    standalone = session.last_standalone
    if live is None and standalone is not None and standalone.id == stream_id:
        live = standalone
        reopen = session.standalone is None  # its connection broke: resuming reopens it
    elif live is None and session.shared and session.is_standalone_id(stream_id) and (
            session.standalone is None):
        live = ResponseStream(session, stream_id, standalone=True,  # another instance's
                              limit=limit)
        reopen = True
    listener = Listener(limit)
    if live is not None:
        # Attach first: nothing stored from now on is missed. A connection still attached
        # broke unnoticed so far (a quick reconnect): this one takes over, and the old
        # one's response is completed without what it had not written yet.
        old, live.listener = live.listener, listener
        if old is not None:
            old.retire()
        if reopen:
            session.open_standalone(live, listener)
    try:
        replay = await store.replay(session.session_id, last)
    except StoreUnavailable:  # the 503 (resume again later): let go of the stream
        if live is not None and live.listener is listener:
            live.listener = None
            if live.standalone:
                session.release_standalone(live)
        raise
    _, events = replay or (stream_id, [])  # (None: the session ended meanwhile)
    last_seq = int(events[-1][0].rpartition("_")[2]) if events else int(
        last.rpartition("_")[2])
    if live is None and session.shared and not session.is_standalone_id(stream_id) and (
            not any(is_response(data) or data == STREAM_END for _, data in events)):
        await _follow(session, stream_id, last_seq, events, send, receive, idle, stop)
        return
    if live is None or live.listener is not listener:
        live = ResponseStream(session, stream_id, limit=limit)  # finished: replay only
        live.done = True
        live.finished.set()
    try:
        await write_sse(live, listener, send, receive, retry_ms, skip_through=last_seq,
                        replay=events, stalls=stalls)
    finally:
        if live.standalone:
            session.release_standalone(live)


def is_response(data: bytes) -> bool:
    """Whether an event is a JSON-RPC response (the final event of a request stream)."""
    if not data:
        return False
    try:
        msg = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return is_answer(msg)


async def _follow(session: HttpSession, stream_id: str, after: int,
                  replay: list[tuple[str, bytes]], send: Send, receive: Receive,
                  idle: float, stop: Callable[[], bool]) -> None:
    """A request stream live on another instance: its events as they are stored."""
    follow: Any = getattr(session.store, "follow")  # noqa: B009 (a shared store's extra)
    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
    with DisconnectWatch(receive) as watch:
        try:
            events, last_event = replay, time.monotonic()
            while True:
                for event_id, data in events:
                    if data and data != STREAM_END:
                        await send({"type": "http.response.body",
                                    "body": encode_event(data, event_id), "more_body": True})
                    if is_response(data) or data == STREAM_END:
                        await send({"type": "http.response.body", "body": b"",
                                    "more_body": False})
                        return
                if events:
                    last_event = time.monotonic()
                if watch.gone or stop() or time.monotonic() - last_event > idle:
                    break
                after, events = await follow(session.session_id, stream_id, after)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the client went away
        except StoreUnavailable:  # the client resumes again later, from its last event
            with contextlib.suppress(OSError):
                await send({"type": "http.response.body", "body": b"", "more_body": False})
