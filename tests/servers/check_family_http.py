"""The good notes server over Streamable HTTP, behind a middleware that breaks one rule.

    python tests/servers/check_family_http.py RULE --port N

serves ``check_good.py``'s server at ``http://127.0.0.1:N/mcp`` wrapped in a small ASGI
middleware that applies the one HTTP defect :data:`DEFECTS` names for ``RULE`` (a checker
rule id such as ``HTTP.origin`` or ``M028``). The checker's family tests expect exactly that
rule, and no other, to fail. The HTTP twin of ``check_family.py``, for the rules only the
HTTP transport can break: status codes, headers, Origin, session ids.

A defect is a pair of functions over one :class:`Exchange` (the request, its body already
read): ``request(ex)`` may rewrite the request headers before the app sees them, or answer
the request itself (returning ``(status, content type, body)``); ``response(ex, status,
headers)`` may rewrite the response status and headers, and returns the status.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any, NamedTuple

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

GOOD = Path(__file__).with_name("check_good.py")
REVISIONS = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}
META_VERSION = "io.modelcontextprotocol/protocolVersion"
SESSION = b"mcp-session-id"


class Exchange:
    """One HTTP request as the middleware sees it: headers (mutable) and the parsed body."""

    def __init__(self, scope: Scope, body: bytes) -> None:
        self.scope = scope
        self.body = body
        try:
            self.msg: Any = json.loads(body) if body else None
        except ValueError:
            self.msg = None

    @property
    def method(self) -> str:
        return str(self.scope["method"])

    @property
    def rpc_method(self) -> Any:
        return self.msg.get("method") if isinstance(self.msg, dict) else None

    @property
    def params(self) -> dict[str, Any]:
        p = self.msg.get("params") if isinstance(self.msg, dict) else None
        return p if isinstance(p, dict) else {}

    def header(self, name: bytes) -> str | None:
        return next((v.decode("latin-1") for k, v in self.scope["headers"] if k == name), None)

    def set_header(self, name: bytes, value: str | None) -> None:
        headers = [(k, v) for k, v in self.scope["headers"] if k != name]
        if value is not None:
            headers.append((name, value.encode("latin-1")))
        self.scope["headers"] = headers


Direct = tuple[int, str, bytes]


def keep_request(ex: Exchange) -> Direct | None:
    return None


def keep_response(ex: Exchange, status: int, headers: Headers) -> int:
    return status


class Defect(NamedTuple):
    request: Callable[[Exchange], Direct | None] = keep_request
    response: Callable[[Exchange, int, Headers], int] = keep_response


# ------------------------------------------------------------------------- defects


def _strip_header(name: bytes, when: Callable[[str], bool] = lambda value: True) -> Defect:
    def request(ex: Exchange) -> None:
        value = ex.header(name)
        if value is not None and when(value):
            ex.set_header(name, None)
    return Defect(request=request)


def _status(old: int, new: int, when: Callable[[Exchange], bool]) -> Defect:
    def response(ex: Exchange, status: int, headers: Headers) -> int:
        return new if status == old and when(ex) else status
    return Defect(response=response)


def _plain_get(ex: Exchange) -> Direct | None:
    return (200, "text/plain", b"nothing to stream here") if ex.method == "GET" else None


def _session_ids(outward: Callable[[str], str]) -> Defect:
    """Session ids as the client sees them are ``outward(real id)``; mapped back inbound."""
    inward: dict[str, str] = {}

    def request(ex: Exchange) -> None:
        sid = ex.header(SESSION)
        if sid in inward:
            ex.set_header(SESSION, inward[sid])

    def response(ex: Exchange, status: int, headers: Headers) -> int:
        for i, (k, v) in enumerate(headers):
            if k == SESSION:
                real = v.decode("latin-1")
                shown = next((o for o, r in inward.items() if r == real), None)
                if shown is None:
                    shown = outward(real)
                    inward[shown] = real
                headers[i] = (k, shown.encode("latin-1"))
        return status
    return Defect(request, response)


_numbers = itertools.count(1)


def _agree(header: bytes, value_of: Callable[[Exchange], Any]) -> Defect:
    """Rewrite ``header`` to agree with the body, so the app never sees a mismatch."""

    def request(ex: Exchange) -> None:
        value = value_of(ex)
        if ex.header(header) is not None and isinstance(value, str):
            ex.set_header(header, value)
    return Defect(request=request)


def _named(ex: Exchange) -> Any:
    return ex.params.get("uri") if ex.rpc_method == "resources/read" else ex.params.get("name")


DEFECTS: dict[str, Defect] = {
    "HTTP.origin": _strip_header(b"origin"),
    "HTTP.protocol-version-header": _strip_header(
        b"mcp-protocol-version", lambda value: value not in REVISIONS),
    "HTTP.unknown-session": _status(404, 400, lambda ex: ex.header(SESSION) is not None),
    "S006": _status(400, 404, lambda ex: ex.header(SESSION) is None
                    and ex.rpc_method not in (None, "initialize") and "_meta" not in ex.params),
    "M022": _status(202, 200, lambda ex: ex.rpc_method == "notifications/initialized"),
    "M025": Defect(request=_plain_get),
    "M028": _session_ids(lambda real: f"session {real}"),
    "S005": _session_ids(lambda real: str(next(_numbers))),
    "STATELESS.header-method": _agree(b"mcp-method", lambda ex: ex.rpc_method),
    "STATELESS.header-name": _agree(b"mcp-name", _named),
    "STATELESS.header-version": _agree(
        b"mcp-protocol-version", lambda ex: (ex.params.get("_meta") or {}).get(META_VERSION)),
}


# ------------------------------------------------------------------------- the middleware


def breaking(app: Any, defect: Defect) -> Any:
    """``app`` wrapped so that every HTTP exchange goes through ``defect``."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        body = b""
        while True:  # read the whole request body first, then replay it to the app
            message = await receive()
            body += message.get("body", b"")
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        ex = Exchange(scope, body)
        direct = defect.request(ex)
        if direct is not None:
            status, ctype, content = direct
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", ctype.encode())]})
            await send({"type": "http.response.body", "body": content})
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        async def send_through(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                status = defect.response(ex, message["status"], headers)
                message = {**message, "status": status, "headers": headers}
            await send(message)

        await app(ex.scope, replay, send_through)

    return middleware


def load_good_server() -> Any:
    spec = importlib.util.spec_from_file_location("check_good", GOOD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' annotations through it
    spec.loader.exec_module(module)
    return module.server


def main() -> int:
    args = sys.argv[1:]
    if len(args) != 3 or args[0] not in DEFECTS or args[1] != "--port":
        print(f"usage: check_family_http.py RULE --port N\nRULE: {' '.join(DEFECTS)}",
              file=sys.stderr)
        return 2
    import uvicorn

    app = breaking(load_good_server().asgi_app(), DEFECTS[args[0]])
    uvicorn.run(app, host="127.0.0.1", port=int(args[2]), log_level="warning",
                access_log=False, lifespan="on")
    return 0


if __name__ == "__main__":
    sys.exit(main())
