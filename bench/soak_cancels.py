"""The cancellation phase of bench/soak.py: many cancels on a few sessions of one server,
then the proof that they left nothing behind.

The server is ``bench/soak_server.py`` (the everything server with ``max_in_flight_total``
lowered to ``slots``), so a request slot a cancelled request never gives back is seen: a
*probe* sends ``slots`` requests at once (``sleep`` 1.5 s, on a few sessions), and every
503 it gets is a slot still held. The probe runs before and after the cancels.

Each cancel: ``slow_compute`` (60 s, progress every 0.25 s) on one of ``sessions``
sessions, ``notifications/cancelled`` once its first progress came; the exchange must
end within the cancel bound, and the id is used again for an ``echo`` (see
``soak_sessions``). ``workers`` cancels run at once; the phase ends after ``count``
cancels or ``seconds``. RSS is compared between the point where a tenth of the cancels
were done and a few seconds after the last one.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from bench.soak_clients import Faults, Knobs, Tally, text_is
from bench.soak_procs import rss_fds
from bench.soak_sessions import StatefulClient


async def probe(port: int, slots: int, sessions: int, tally: Tally) -> dict[str, int]:
    """``slots`` requests in flight at once; how many were refused with 503 (slots held by
    nothing the client knows of) and how many answered right."""
    knobs = Knobs(port, tally, Faults(), answer_seconds=15)
    owners = [StatefulClient(7000 + n, knobs, random.Random(n)) for n in range(sessions)]
    for owner in owners:
        await owner.open(time.monotonic() + 15)
    refused = 0

    async def one(n: int) -> None:
        nonlocal refused
        client = owners[n % sessions].sibling(n + 1)
        rid = next(client.ids)
        try:
            resp = await asyncio.wait_for(client.conn.send("POST", client.headers(), (
                b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sleep",'
                b'"arguments":{"seconds":1.5}}}' % rid)), 15)
            body = await asyncio.wait_for(resp.read(), 15)
            if resp.status == 503:
                refused += 1
            elif resp.status != 200 or b"Slept 1.5 seconds." not in body:
                tally.errors[f"probe: HTTP {resp.status}"] += 1
            else:
                tally.ok["probe"] += 1
        except Exception as exc:  # counted: the probe must not hide a failure
            tally.lost[f"probe: {type(exc).__name__}"] += 1
        finally:
            client.close()

    await asyncio.gather(*(one(n) for n in range(slots)))
    for owner in owners:
        owner.close()
    return {"sent": slots, "refused_503": refused}


async def cancels(knobs: Knobs, pid: int, count: int, seconds: float, workers: int,
                  sessions: int, prefill: int) -> dict[str, Any]:
    """The cancels (module docstring); the RSS and 503 figures around them. An exchange
    that did not end is left open in ``knobs.parked`` (a host waiting for its own
    timeout), which holds its slot if the server holds one for it. ``prefill``: SSE answers
    on each session first, so its event log is full before RSS is first read."""
    tally = knobs.tally
    owners = [StatefulClient(9000 + n, knobs, random.Random(n)) for n in range(sessions)]
    for owner in owners:
        if await owner.open(time.monotonic() + 15):
            await owner.fill(prefill)
    done = 0
    warm = (rss_fds(pid) or (0.0, 0))[0]  # replaced once a tenth of the cancels are done
    warmed = False
    end = time.monotonic() + seconds
    refused_before = tally.retried.copy()

    async def worker(n: int) -> None:
        nonlocal done, warm, warmed
        client = owners[n % sessions].sibling(n + 1)
        try:
            while done < count and time.monotonic() < end:
                done += 1
                await client.call("phase cancel", "tools/call", {
                    "name": "slow_compute", "arguments": {"seconds": 60}},
                    text_is("Computed result in 60s"), progress=True, cancel=True)
                if not warmed and done >= max(1, count // 10):
                    warmed = True
                    warm = (rss_fds(pid) or (0.0, 0))[0]
        finally:
            client.close()

    started = time.monotonic()
    await asyncio.gather(*(worker(n) for n in range(workers)))
    elapsed = time.monotonic() - started
    for owner in owners:
        owner.close()
    await asyncio.sleep(3)
    after = (rss_fds(pid) or (0.0, 0))[0]
    refused = tally.retried["HTTP 503"] - refused_before["HTTP 503"]
    return {"cancels_done": done, "seconds": round(elapsed, 1), "rss_warm_mb": round(warm, 1),
            "rss_after_mb": round(after, 1),
            "kb_per_cancel": round((after - warm) * 1024 / max(1, done * 0.9), 2),
            "http_503_during": refused}
