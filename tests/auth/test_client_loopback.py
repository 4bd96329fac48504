"""``LoopbackRedirect``: the one-shot loopback listener a CLI waits on, over real sockets.

A test plays the browser with httpx (or a raw socket): the callback's URL comes back,
other paths get 404 without ending the wait, an idle connection does not block the
callback, query values are escaped on the page, the wait times out with
``AuthorizationFailed``, a busy port is refused with a message naming it.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

import anyio
import httpx
import pytest

from mcpkit.auth import AuthorizationFailed, LoopbackRedirect

pytestmark = pytest.mark.anyio

AUTH_URL = "https://as.example.com/authorize?client_id=c&state=s"


def quiet(seen: list[str]) -> LoopbackRedirect:
    return LoopbackRedirect(open_browser=False, timeout=10, announce=seen.append)


async def run_with_browser(handler: LoopbackRedirect,
                           browser: Callable[[], Awaitable[None]]) -> str:
    """``handler.authorize`` while ``browser`` runs against its listener; its result."""
    result: list[str] = []

    async def wait() -> None:
        result.append(await handler.authorize(AUTH_URL))

    with anyio.fail_after(15):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(wait)
            await anyio.sleep(0.05)
            await browser()
    return result[0]


async def test_the_callback_is_captured_and_answered() -> None:
    seen: list[str] = []
    handler = quiet(seen)
    assert handler.redirect_uri == f"http://127.0.0.1:{handler.port}/callback"
    assert handler.port != 0
    pages: list[httpx.Response] = []

    async def browser() -> None:
        async with httpx.AsyncClient(timeout=5) as http:
            pages.append(await http.get(f"{handler.redirect_uri}?code=abc&state=s&iss=x"))

    url = await run_with_browser(handler, browser)
    assert url == f"{handler.redirect_uri}?code=abc&state=s&iss=x"
    assert seen == [AUTH_URL]  # the URL was shown to the user
    (page,) = pages
    assert page.status_code == 200 and "close this window" in page.text
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["cache-control"] == "no-store"
    with pytest.raises(OSError):  # the listener is closed afterwards
        await anyio.connect_tcp("127.0.0.1", handler.port)


async def test_other_paths_get_404_and_an_idle_connection_blocks_nothing() -> None:
    handler = quiet([])
    statuses: list[int] = []

    async def browser() -> None:
        idle = await anyio.connect_tcp("127.0.0.1", handler.port)  # a preconnect, silent
        async with idle, httpx.AsyncClient(timeout=5) as http:
            base = f"http://127.0.0.1:{handler.port}"
            statuses.append((await http.get(f"{base}/favicon.ico")).status_code)
            statuses.append((await http.get(f"{base}/callbackx?code=1")).status_code)
            statuses.append((await http.post(f"{base}/callback?code=2")).status_code)
            statuses.append((await http.get(f"{base}/callback?code=3&state=s")).status_code)

    url = await run_with_browser(handler, browser)
    assert statuses == [404, 404, 405, 200]
    assert url.endswith("/callback?code=3&state=s")


async def test_query_values_are_escaped_on_the_page() -> None:
    handler = quiet([])
    pages: list[str] = []
    evil = "<script>alert(1)</script>"

    async def browser() -> None:
        async with httpx.AsyncClient(timeout=5) as http:
            answer = await http.get(handler.redirect_uri, params={
                "error": "access_denied", "error_description": evil})
            pages.append(answer.text)

    url = await run_with_browser(handler, browser)
    assert "error=access_denied" in url
    (page,) = pages
    assert "access_denied" in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


async def test_garbage_and_oversized_requests_are_refused() -> None:
    handler = quiet([])
    answers: list[bytes] = []

    async def raw(data: bytes) -> None:
        stream = await anyio.connect_tcp("127.0.0.1", handler.port)
        async with stream:
            await stream.send(data)
            received = b""
            try:
                while True:
                    received += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass
            answers.append(received)

    async def browser() -> None:
        await raw(b"NONSENSE\r\n\r\n")
        await raw(b"GET /callback?" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n")
        async with httpx.AsyncClient(timeout=5) as http:
            await http.get(f"{handler.redirect_uri}?code=ok")

    url = await run_with_browser(handler, browser)
    assert url.endswith("?code=ok")
    assert [a.split(b"\r\n", 1)[0] for a in answers] == [b"HTTP/1.1 400 Bad request"] * 2


async def test_no_callback_times_out_with_advice() -> None:
    handler = LoopbackRedirect(open_browser=False, timeout=0.3, announce=lambda url: None)
    with anyio.fail_after(10), pytest.raises(AuthorizationFailed) as caught:
        await handler.authorize(AUTH_URL)
    message = str(caught.value)
    assert "did not come back" in message and handler.redirect_uri in message
    assert "open the authorization URL in a browser on this machine" in message


async def test_a_fixed_port_and_a_second_authorization_rebind_it() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    handler = LoopbackRedirect(port, open_browser=False, timeout=10, announce=lambda u: None)
    assert handler.redirect_uri == f"http://127.0.0.1:{port}/callback"
    for code in ("one", "two"):
        async def browser(code: str = code) -> None:
            async with httpx.AsyncClient(timeout=5) as http:
                await http.get(f"{handler.redirect_uri}?code={code}")

        assert (await run_with_browser(handler, browser)).endswith(f"code={code}")


def test_a_port_in_use_is_refused_with_its_number() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        with pytest.raises(AuthorizationFailed) as caught:
            LoopbackRedirect(port)
    assert f"port {port}" in str(caught.value) and "another program uses it" in str(caught.value)


def test_only_loopback_hosts_and_sane_options() -> None:
    for bad in ({"host": "0.0.0.0"}, {"host": "localhost"}, {"path": "callback"},
                {"timeout": 0}):
        with pytest.raises(ValueError):
            LoopbackRedirect(**bad)  # type: ignore[arg-type]


async def test_an_unsafe_authorization_url_is_refused_before_listening() -> None:
    handler = quiet([])
    with pytest.raises(AuthorizationFailed, match="must use https"):
        await handler.authorize("http://as.example.com/authorize")
    handler.close()
