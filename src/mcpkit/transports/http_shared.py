"""What a Streamable HTTP endpoint does when other instances share its sessions.

With a shared session store and a ``SessionBus`` (``Server.asgi_app(store="redis://...")``)
any instance serves any request of any session, and a session may be held by several
instances at once. ``SharedSessions`` keeps them consistent:

- A request renews the session's record in the store and reads it back (``touch``)
  unless this instance did so less than the store's ``recheck`` seconds ago: a DELETE
  tells every holder at once (``ENDED`` on the bus), a saved change too (``CHANGED``:
  the log level, the end of the handshake; the holders re-read at their next request),
  and an expiry or a lost bus message is seen within ``recheck``. That spares the
  Redis round trip of most requests (bench/scaleout.py).
- An instance holding a session listens to its bus channel. A POST carrying the answer to
  a server-to-client request another instance made (sampling, elicitation, roots, ping) is
  published there, and the instance whose connection awaits that id takes it; so is a
  ``notifications/cancelled`` for a request that runs on another instance, which that
  instance takes (its handler stops and the request's POST ends). Request
  ids are numbered from a random start per instance, so an answer names one request.
- A message for the session's standalone GET stream produced where no GET stream is open
  is published, and the instance holding the GET stream writes it.
- ``list_changed`` and ``resources/updated`` are announced to every instance
  (``mcpkit.server.sharing``); ``reaches`` tells which instance writes them to a session:
  the one holding its GET stream.
- Stream ids carry the instance's token (``<token>-s3``; ``g`` for a GET stream), so
  events of one session from several instances never share an id; resumption on another
  instance follows or takes over the stream (``http_resume``).

Idle expiry on one instance only drops its local copy: the store's TTL decides when a
session ends. Failures to reach the store are ``StoreUnavailable`` (503 to the request).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

import orjson

from ..protocol.lifecycle import State
from ..session import Session
from ..storage.bus import ANSWER, CANCEL, CHANGED, ENDED, NOTIFY, SessionBus
from ..storage.events import EventStore
from ..storage.faults import StoreUnavailable
from ..storage.sessions import SessionStore
from .http_session import HttpSession, is_answer

log = logging.getLogger("mcpkit.http")

FIRST_ID_RANGE = 2**52
"""Server-to-client request ids start at a random number below this (JSON-safe integers)."""


class SharedSessions:
    """The shared-state side of one endpoint (see the module docstring)."""

    def __init__(self, store: SessionStore, events: EventStore, bus: SessionBus) -> None:
        touch = getattr(store, "touch", None)
        if touch is None or not getattr(store, "shared", False):
            raise ValueError("a session bus needs a shared session store (with touch), "
                             "such as RedisSessionStore")
        self.store = store
        self.events = events
        self.bus = bus
        self._touch: Callable[[str], Any] = touch
        self.recheck = float(getattr(store, "recheck", 0.0))
        self.token = secrets.token_hex(4)
        self._held: dict[Session, HttpSession] = {}  # the sessions adopted here
        self._leaving: set[asyncio.Task[None]] = set()  # unsubscriptions under way

    async def adopt(self, session: HttpSession, ended: Callable[[str], None]) -> None:
        """Make ``session`` (new or restored here) one of the deployment's: instance-unique
        stream and request ids, and its bus channel listened to (``ended(sid)`` when
        another instance deletes it)."""
        session.bus = self.bus
        session.stream_prefix = f"{self.token}-"
        self._held[session.session] = session
        session.conn.number_requests_from(secrets.randbelow(FIRST_ID_RANGE))
        try:
            await self.bus.listen(session.session_id,
                                  functools.partial(_deliver, session, ended,
                                                    self.token.encode()))
        except StoreUnavailable:  # the request's 503: the session is not held here
            self._held.pop(session.session, None)
            raise

    async def alive(self, session: HttpSession, asks: bool = False) -> bool:
        """Renew the session's record and take what another instance changed in it
        (the log level); False when another instance ended it, or it expired. Within
        ``recheck`` seconds of the last renewal the local copy is trusted (see above), but
        not for requests (``asks``) while the copy still waits for
        ``notifications/initialized``: the instance that took it may not have told this
        one yet (the bus is not ordered with the client's next request), and the copy
        would refuse them as not ready. (The notification itself is taken on the copy:
        during a store outage too.)"""
        now = time.monotonic()
        if now - session.checked < self.recheck and not (
                asks and session.conn.state is not State.READY):
            return True
        record = await self._touch(session.session_id)
        if not isinstance(record, dict):
            return False
        if record != session.saved:
            try:
                session.conn.restore(record)
            except ValueError:
                return False
            session.saved = record
        session.checked = now
        return True

    async def changed(self, session: HttpSession) -> None:
        """Tell the session's other holders that its record changed (``_persist``); the
        message names this instance, which saved the change and so has it already."""
        await self.bus.publish(session.session_id, CHANGED + self.token.encode())

    def leave(self, session: HttpSession) -> None:
        """Stop listening for a session dropped here, in the background: in a task of
        this object's, not the session's (closing the session, which comes next, cancels
        the session's tasks before they start: its bus channel stayed subscribed)."""
        self._held.pop(session.session, None)
        task = asyncio.get_running_loop().create_task(self._unlisten(session.session_id))
        self._leaving.add(task)
        task.add_done_callback(self._leaving.discard)

    def reaches(self, session: Session) -> bool:
        """Whether a deployment-wide notification for ``session`` is this instance's to
        send: its GET stream is open here (several instances may hold the session; one
        holds the stream). A session not shared (legacy HTTP+SSE) is always reached."""
        held = self._held.get(session)
        return held is None or held.standalone is not None

    async def _unlisten(self, sid: str) -> None:
        with contextlib.suppress(StoreUnavailable):
            await self.bus.unlisten(sid)

    async def forward_answers(self, session: HttpSession, obj: Any) -> Any:
        """The POST body ``obj`` without the answers this instance does not await and the
        cancellations of requests it does not run, which go on the bus to the instance
        that does (None when nothing is left)."""
        messages = obj if isinstance(obj, list) else [obj]
        keep = []
        for msg in messages:
            if is_answer(msg) and "id" in msg and not session.conn.awaits(msg["id"]):
                await self.bus.publish(session.session_id, ANSWER + orjson.dumps(msg))
            elif _cancels_elsewhere(session, msg):  # kept: survives a bus reconnection
                kept = getattr(self.bus, "publish_kept", self.bus.publish)
                await kept(session.session_id, CANCEL + orjson.dumps(msg))
            else:
                keep.append(msg)
        if not keep:
            return None
        return keep if isinstance(obj, list) else keep[0]

    async def delete(self, sid: str) -> None:
        """End a session everywhere: its record and events gone, every holder told. Once
        the record is deleted the DELETE is done: a holder the bus message does not reach
        (the store went away meanwhile) learns it at its next renewal, within
        ``recheck``, rather than the client being told 503 for a DELETE that took effect
        (and 404 when it sends it again)."""
        await self.store.delete(sid)
        with contextlib.suppress(StoreUnavailable):
            await self.bus.publish(sid, ENDED)
        with contextlib.suppress(StoreUnavailable):
            await self.events.drop(sid)


def _runs_here(session: HttpSession, rid: Any) -> bool:
    """Whether the inbound request ``rid`` of the session runs on this instance."""
    return isinstance(rid, str | int) and (rid in session.streams
                                           or session.session.is_handling(rid))


def _cancels_elsewhere(session: HttpSession, msg: Any) -> bool:
    """Whether ``msg`` cancels a request this instance does not run (another may)."""
    if not isinstance(msg, dict) or msg.get("method") != "notifications/cancelled":
        return False
    params = msg.get("params")
    rid = params.get("requestId") if isinstance(params, dict) else None
    return isinstance(rid, str | int) and not _runs_here(session, rid)


def _deliver(session: HttpSession, ended: Callable[[str], None], own: bytes,
             message: bytes) -> None:
    kind, body = message[:1], message[1:]
    if kind == ENDED:
        ended(session.session_id)
    elif kind == CHANGED:
        if body != own:  # another instance saved a change: read the record again at the
            session.checked = 0.0  # next request (its own echo would undo a fresh check)
    elif kind == NOTIFY:
        if session.standalone is not None:
            session.standalone.push(body, False)
    elif kind == ANSWER or kind == CANCEL:
        try:
            msg = orjson.loads(body)
        except orjson.JSONDecodeError:
            return
        if not isinstance(msg, dict):
            return
        if kind == ANSWER and session.conn.awaits(msg.get("id")):
            session.session.receive_message(msg)
        elif kind == CANCEL:
            params = msg.get("params")
            if isinstance(params, dict) and _runs_here(session, params.get("requestId")):
                session.session.receive_message(msg)
