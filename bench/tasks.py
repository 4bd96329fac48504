"""Tasks beside plain calls: round trips per second, and memory per finished task kept.

    .venv/bin/python bench/tasks.py [--calls 2000] [--kept 2000] [--rounds 5] [--json FILE]

One ``Server`` in this process, one client speaking raw JSON-RPC lines over an in-memory
stream (no client library in the measurement), one request in flight at a time:

* plain: ``tools/call`` of a no-op tool;
* task (2025-11-25): ``tools/call`` with ``task`` -> ``CreateTaskResult``, then
  ``tasks/result``, which blocks until the task ends (R25-11.TASKS.8): the round trip, two
  requests, what mcpkit's client sends for ``TaskHandle.result()``; shown beside it, a
  requestor that polls ``tasks/get`` until ``completed`` first (three requests);
* task (2026-07-28 extension): ``tools/call`` -> ``resultType: "task"``, then ``tasks/get``
  until it inlines the result.

The issue's goal: a task round trip costs at most 3 plain calls. The kinds of call take
turns in ``--rounds`` rounds and each rate is the median of its rounds, so a burst of load
from other processes lands on all of them alike. Memory: ``tracemalloc`` over ``--kept``
finished tasks whose records the (memory) store keeps until their ttl.

``--json FILE`` merges the figures into a mcpbench result file (``bench/run.sh`` passes
its ``results.json``) under ``"tasks"``, where ``bench/goals.py`` checks the goal.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import statistics
import time
import tracemalloc
from typing import Any

import anyio
import orjson
from common import merge

from mcpkit import Server
from mcpkit.transports.memory import memory_pair

EXT_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {
                "extensions": {"io.modelcontextprotocol/tasks": {}}}}


class Wire:
    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.ids = itertools.count(1)
        self.buffer = b""

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        rid = next(self.ids)
        await self.stream.send(orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                             "params": params}) + b"\n")
        while True:
            while b"\n" not in self.buffer:
                self.buffer += await self.stream.receive()
            line, self.buffer = self.buffer.split(b"\n", 1)
            msg = orjson.loads(line)
            if msg.get("id") == rid:
                return msg["result"]


def make_server() -> Server:
    server = Server("bench-tasks", max_tasks=1_000_000)

    @server.tool(task="optional")
    async def noop() -> str:
        return "ok"

    return server


async def core_task(wire: Wire, poll: bool = False) -> None:
    created = await wire.call("tools/call", {"name": "noop", "arguments": {}, "task": {}})
    task_id = created["task"]["taskId"]
    for _ in range(1000 if poll else 0):
        if (await wire.call("tasks/get", {"taskId": task_id}))["status"] == "completed":
            break
    await wire.call("tasks/result", {"taskId": task_id})


async def ext_task(wire: Wire) -> None:
    created = await wire.call("tools/call", {"name": "noop", "arguments": {},
                                             "_meta": EXT_META})
    for _ in range(1000):
        got = await wire.call("tasks/get", {"taskId": created["taskId"], "_meta": EXT_META})
        if got["status"] == "completed":
            return


KEYS = {
    "plain tools/call": "plain_rps",
    "task round trip (2025-11-25: tasks/result)": "core_round_trip_rps",
    "  ... tasks/get polled first (2025-11-25)": "core_poll_rps",
    "task round trip (2026-07-28 extension)": "ext_round_trip_rps",
}
"""Printed label -> the key of its rate in the JSON figures."""


async def main(calls: int, kept: int, rounds: int, out: str | None) -> None:
    server = make_server()
    client, end = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, end)
        wire = Wire(client)
        await wire.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": "bench", "version": "1"}})
        await client.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        rates: dict[str, float] = {}
        runs = {
            "plain tools/call": lambda: wire.call("tools/call", {"name": "noop",
                                                                 "arguments": {}}),
            "task round trip (2025-11-25: tasks/result)": lambda: core_task(wire),
            "  ... tasks/get polled first (2025-11-25)": lambda: core_task(wire, True),
            "task round trip (2026-07-28 extension)": lambda: ext_task(wire),
        }
        for run in runs.values():
            for _ in range(min(200, calls)):  # warm-up
                await run()
        samples: dict[str, list[float]] = {label: [] for label in runs}
        per_round = max(1, calls // rounds)
        for _ in range(rounds):
            for label, run in runs.items():
                start = time.perf_counter()
                for _ in range(per_round):
                    await run()
                samples[label].append(per_round / (time.perf_counter() - start))
        rates = {label: statistics.median(got) for label, got in samples.items()}
        plain = rates["plain tools/call"]
        for label, rate in rates.items():
            print(f"{label:42s} {rate:9.0f}/s  = {plain / rate:4.2f} plain calls")
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for _ in range(kept):
            await core_task(wire)
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
        print(f"{'memory per finished task kept':42s} {grown / kept / 1024:9.2f} KB "
              f"({kept} tasks, memory store)")
        if out is not None:
            figures: dict[str, float] = {KEYS[label]: rate for label, rate in rates.items()}
            figures["kb_per_finished_task"] = grown / kept / 1024
            merge(out, "tasks", figures)
        await client.aclose()
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--kept", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", help="merge the figures into this mcpbench result file")
    opts = parser.parse_args()
    anyio.run(main, opts.calls, opts.kept, max(1, opts.rounds), opts.json)
