"""HTTP routes beside the MCP endpoint: ``@server.route("/health")``, and the opt-in health
and readiness routes (``asgi_app(health=True)``).

A route is a function of a Starlette ``Request`` returning a Starlette ``Response`` (sync
functions run in a worker thread), matched by Starlette's router: the ASGI toolkit FastAPI
and FastMCP are built on, so a FastMCP ``@mcp.custom_route`` handler ports unchanged and
path parameters (``/items/{item_id}``) mean what they mean there. It is served by the same
ASGI app as the MCP endpoint, after the server's lifespan started (``server.lifespan_state``
holds what it yielded). A route is public unless declared with ``auth=True``: a protected
server (``asgi_app(auth=...)``) then asks it for the same bearer token as the endpoint.

``health=True`` adds ``GET /health`` (liveness: 200 while the process serves) and
``GET /ready`` (readiness: 503 while the app drains for a shutdown, or while a store it
depends on does not answer: Redis, a task store; 200 otherwise), both public, each answer
a small JSON object a load balancer or an operator can read.

Imported only by a server that declares a route or asks for health (the start-up guard
tests hold it): Starlette is not loaded otherwise.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

import anyio

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from ..transports.asgi import Receive, Scope, Send

    ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

Endpoint = Callable[..., Any]
Check = Callable[[], Awaitable[None]]

HEALTH_PATH = "/health"
READY_PATH = "/ready"
CHECK_TIMEOUT = 2.0
"""Seconds a readiness check may take before it counts as failed."""
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RouteSpec:
    """One declared route: ``path`` (a Starlette path, ``{name}`` parameters allowed),
    ``endpoint``, ``methods`` and whether a protected server asks it for a token."""

    __slots__ = ("auth", "endpoint", "methods", "name", "path")

    def __init__(self, path: str, endpoint: Endpoint, methods: Iterable[str] | None = None,
                 *, name: str | None = None, auth: bool = False) -> None:
        if not callable(endpoint):
            raise TypeError(f"a route's endpoint is a function of a request, got {endpoint!r}")
        self.path = path
        self.endpoint = endpoint
        self.methods = route_methods(path, methods)
        self.name = name or getattr(endpoint, "__name__", None)
        self.auth = auth


def route_methods(path: str, methods: Iterable[str] | None) -> tuple[str, ...]:
    """``methods`` of a route at ``path``, upper-cased (default GET); a ``ValueError``
    for a path that does not start with ``/`` or a method HTTP does not have."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError(f"a route's path starts with '/', got {path!r}")
    wanted = ["GET"] if methods is None else [str(m).upper() for m in methods]
    unknown = sorted(set(wanted) - _METHODS)
    if not wanted or unknown:
        raise ValueError(f"route {path}: methods must be HTTP methods among "
                         f"{', '.join(sorted(_METHODS))}; got {list(wanted)!r}")
    return tuple(wanted)


def check_paths(specs: list[RouteSpec], taken: Iterable[str]) -> None:
    """Refuse a route whose path another route or an endpoint of the app already answers
    (``taken``: the MCP path, the legacy SSE paths, the well-known metadata paths)."""
    seen: set[str] = set()
    reserved = {p.rstrip("/") or "/" for p in taken}
    for spec in specs:
        key = spec.path.rstrip("/") or "/"
        if key in reserved:
            raise ValueError(f"route {spec.path} is a path the MCP endpoint serves; pick "
                             "another one")
        if key in seen:
            raise ValueError(f"route {spec.path} is declared twice")
        seen.add(key)


def router(specs: list[RouteSpec], not_found: ASGIApp) -> ASGIApp:
    """The ASGI app that serves ``specs`` and hands any other path to ``not_found``."""
    from starlette.routing import Route, Router

    routes = [Route(s.path, s.endpoint, methods=list(s.methods), name=s.name)
              for s in specs]
    served: Any = Router(routes=routes, redirect_slashes=False, default=cast(Any, not_found))
    return cast("ASGIApp", served)


def public_matcher(specs: list[RouteSpec]) -> Callable[[str], bool] | None:
    """Whether a request path is one of the public routes' (path parameters matched as
    the router matches them); None when every route asks for a token."""
    from starlette.routing import compile_path

    patterns = [compile_path(s.path)[0] for s in specs if not s.auth]
    if not patterns:
        return None
    return lambda path: any(p.match(path) for p in patterns)


def health_routes(draining: Callable[[], bool], checks: dict[str, Check]) -> list[RouteSpec]:
    """``GET /health`` and ``GET /ready`` (see the module docstring); ``checks``: each
    store's probe by name, run concurrently, each bounded by ``CHECK_TIMEOUT``."""

    async def health(request: Request) -> Response:
        from starlette.responses import JSONResponse

        return JSONResponse({"status": "ok"})

    async def ready(request: Request) -> Response:
        from starlette.responses import JSONResponse

        if draining():
            return JSONResponse({"status": "draining"}, status_code=503,
                                headers={"retry-after": "1"})
        results = await run_checks(checks)
        ok = all(v == "ok" for v in results.values())
        body: dict[str, Any] = {"status": "ready" if ok else "unavailable"}
        if results:
            body["checks"] = results
        return JSONResponse(body, status_code=200 if ok else 503,
                            headers=None if ok else {"retry-after": "1"})

    return [RouteSpec(HEALTH_PATH, health, ["GET"], name="health"),
            RouteSpec(READY_PATH, ready, ["GET"], name="ready")]


async def run_checks(checks: dict[str, Check]) -> dict[str, str]:
    """Each check's outcome: ``"ok"``, or what went wrong in a line."""
    results: dict[str, str] = {}

    async def one(name: str, check: Check) -> None:
        try:
            with anyio.fail_after(CHECK_TIMEOUT):
                await check()
        except TimeoutError:
            results[name] = f"no answer within {CHECK_TIMEOUT:g} s"
        except Exception as exc:  # any failure of a probe is "not ready", said plainly
            results[name] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        else:
            results[name] = "ok"

    async with anyio.create_task_group() as tg:
        for name, check in checks.items():
            tg.start_soon(one, name, check)
    return {name: results[name] for name in checks}
