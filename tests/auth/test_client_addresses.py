"""The OAuth client's address rule: no fetch to private, loopback or link-local addresses
the MCP server is not on (``mcpkit.auth.addresses``, ``auth.client.steps.AddressGuard``).

The classifier on its own; the flow (httpx.MockTransport, as in test_client_flow.py)
refusing documents of a public MCP server that name such addresses, and allowing them
with ``allow_private_networks`` or when the MCP server is there itself; and the
connected-address check against a real loopback server reached through a name that
resolves to 127.0.0.1 (``socket.getaddrinfo`` patched: a DNS rebinding), with both pumps.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import httpx
import pytest

from mcpkit.auth import AuthorizationFailed, HostClass, OAuth, classify_host
from mcpkit.auth.addresses import classify_address, refusal
from mcpkit.auth.client.steps import AddressGuard

from .oauth_as import AuthServer
from .test_client_flow import MCP, Browser, Resource

PUBLIC, PRIVATE, LOOPBACK, LINK_LOCAL, UNROUTABLE = (
    HostClass.PUBLIC, HostClass.PRIVATE, HostClass.LOOPBACK, HostClass.LINK_LOCAL,
    HostClass.UNROUTABLE)

# ------------------------------------------------------------------ the classifier


@pytest.mark.parametrize(("host", "expected"), [
    ("8.8.8.8", PUBLIC), ("2606:4700::1", PUBLIC), ("[2606:4700::1]", PUBLIC),
    ("10.0.0.5", PRIVATE), ("172.16.0.1", PRIVATE), ("192.168.1.1", PRIVATE),
    ("100.64.0.1", PRIVATE), ("[fd00::1]", PRIVATE), ("fec0::1", PRIVATE),
    ("192.0.2.1", PRIVATE),  # documentation ranges are not globally routable either
    ("127.0.0.1", LOOPBACK), ("127.9.9.9", LOOPBACK), ("[::1]", LOOPBACK),
    ("0.0.0.0", LOOPBACK), ("[::]", LOOPBACK),  # connecting to them reaches this host
    ("localhost", LOOPBACK), ("LOCALHOST", LOOPBACK), ("localhost.", LOOPBACK),
    ("Api.Localhost", LOOPBACK), ("a.localhost.", LOOPBACK),
    ("169.254.169.254", LINK_LOCAL), ("169.254.0.1", LINK_LOCAL), ("[fe80::1]", LINK_LOCAL),
    ("fe80::1%25eth0", LINK_LOCAL), ("fd00:ec2::254", LINK_LOCAL),
    ("100.100.100.200", LINK_LOCAL), ("metadata.google.internal", LINK_LOCAL),
    ("METADATA.GOOGLE.INTERNAL.", LINK_LOCAL),
    ("224.0.0.1", UNROUTABLE), ("255.255.255.255", UNROUTABLE), ("240.0.0.1", UNROUTABLE),
    ("[ff02::1]", UNROUTABLE), ("::7f00:1", UNROUTABLE),  # IPv4-compatible: reserved
    # IPv4-mapped and NAT64 IPv6 addresses count as the IPv4 address they carry
    ("[::ffff:127.0.0.1]", LOOPBACK), ("::ffff:7f00:1", LOOPBACK),
    ("::ffff:a9fe:a9fe", LINK_LOCAL), ("::ffff:10.0.0.1", PRIVATE),
    ("64:ff9b::a9fe:a9fe", LINK_LOCAL), ("64:ff9b::808:808", PUBLIC),
    # what the C library's inet_aton reads as an address (httpx passes these as names)
    ("127.1", LOOPBACK), ("2130706433", LOOPBACK), ("017700000001", LOOPBACK),
    ("0x7f.0.0.1", LOOPBACK), ("0x7F000001", LOOPBACK), ("0177.0.0.1", LOOPBACK),
    ("127.0.0.01", LOOPBACK), ("127.0.0.1.", LOOPBACK), ("2852039166", LINK_LOCAL),
    ("0xa9.0xfe.0xa9.0xfe", LINK_LOCAL), ("10.1", PRIVATE), ("1.16777215", PUBLIC),
    # names: only resolving them tells
    ("mcp.example.com", None), ("localhost.example.com", None), ("1.2.3.4.5", None),
    ("256.1", None), ("1.16777216", None), ("08.1", None), ("0x7g", None), ("1_0.1", None),
    ("", None), ("xn--lcalhost-x3a", None),
])
def test_classify_host(host: str, expected: HostClass | None) -> None:
    assert classify_host(host) is expected


def test_the_classifier_agrees_with_the_resolver_on_numeric_names() -> None:
    for host in ("127.1", "2130706433", "0x7f.1", "0177.0.0.1", "127.0.0.01"):
        assert socket.getaddrinfo(host, 80)[0][4][0] == "127.0.0.1"
        assert classify_host(host) is LOOPBACK
    assert classify_address("no address") is UNROUTABLE


@pytest.mark.parametrize(("target", "server", "allow", "allowed"), [
    (PUBLIC, {PUBLIC}, False, True), (PUBLIC, {LOOPBACK}, False, True),
    (PRIVATE, {PUBLIC}, False, False), (PRIVATE, {PRIVATE}, False, True),
    (PRIVATE, {PUBLIC}, True, True), (LOOPBACK, {PUBLIC}, False, False),
    (LOOPBACK, {LOOPBACK}, False, True), (LOOPBACK, {PUBLIC}, True, True),
    (LOOPBACK, {PRIVATE}, False, False), (PRIVATE, {LOOPBACK}, False, False),
    (LINK_LOCAL, {PUBLIC}, False, False), (LINK_LOCAL, {PUBLIC}, True, False),
    (LINK_LOCAL, {PRIVATE, LOOPBACK}, True, False), (LINK_LOCAL, {LINK_LOCAL}, False, True),
    (UNROUTABLE, {UNROUTABLE}, True, False),
])
def test_the_rule(target: HostClass, server: set[HostClass], allow: bool,
                  allowed: bool) -> None:
    reason = refusal(target, server, allow_private_networks=allow)
    assert (reason is None) is allowed
    if reason is not None and target is not UNROUTABLE:
        assert target.value in reason
        assert ("allow_private_networks" in reason) is (target is not LINK_LOCAL)


# ------------------------------------------------------------------ the flow


def flow_world(issuer: str, *, mcp: str = MCP, **oauth: Any) -> tuple[httpx.Client,
                                                                       list[str]]:
    """An MCP server at ``mcp`` whose PRM names ``issuer``; the URLs requested."""
    server = AuthServer(base=issuer)
    resource = Resource(server, prm_resource=mcp)
    seen: list[str] = []

    def route(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        at = httpx.URL(issuer)
        target = server if request.url.netloc == at.netloc else resource
        return target.handle(request)

    flow = OAuth(Browser(server), **oauth)
    return httpx.Client(transport=httpx.MockTransport(route), auth=flow), seen


@pytest.mark.parametrize("issuer", [
    "https://169.254.169.254", "https://10.0.0.1", "https://[fd00::1]",
    "http://localhost:6379", "http://127.0.0.1:6379", "https://2130706433",
    "https://[::ffff:169.254.169.254]", "https://metadata.google.internal",
    "https://0x7f.1", "https://0.0.0.0:6379",
])
def test_a_public_mcp_server_cannot_send_the_client_to_a_private_address(
        issuer: str) -> None:
    http, seen = flow_world(issuer)
    with http, pytest.raises(AuthorizationFailed) as failure:
        http.post(MCP, content=b"read")
    message = str(failure.value)
    assert "refused to fetch" in message and httpx.URL(issuer).host in message, message
    assert not [url for url in seen if httpx.URL(url).host == httpx.URL(issuer).host]


def test_endpoints_in_the_metadata_are_held_to_the_rule_too(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A public authorization server whose metadata names a registration endpoint on
    the user's network."""
    original = AuthServer.metadata

    def metadata(self: AuthServer) -> dict[str, Any]:
        return {**original(self), "registration_endpoint": "https://10.0.0.7/register"}

    monkeypatch.setattr(AuthServer, "metadata", metadata)
    http, seen = flow_world("https://as.example.com")
    with http, pytest.raises(AuthorizationFailed, match=r"https://10\.0\.0\.7/register"):
        http.post(MCP, content=b"read")
    assert "https://as.example.com/.well-known/oauth-authorization-server" in seen
    assert not [url for url in seen if "10.0.0.7" in url]


def test_allow_private_networks_lets_private_and_loopback_through() -> None:
    for issuer in ("https://10.0.0.1", "http://127.0.0.1:9000"):
        http, seen = flow_world(issuer, allow_private_networks=True)
        with http:
            assert http.post(MCP, content=b"read").status_code == 200
        assert any(httpx.URL(url).host == httpx.URL(issuer).host for url in seen)


def test_allow_private_networks_still_refuses_link_local() -> None:
    http, _ = flow_world("https://169.254.169.254", allow_private_networks=True)
    with http, pytest.raises(AuthorizationFailed, match="link-local"):
        http.post(MCP, content=b"read")


@pytest.mark.parametrize(("mcp", "issuer"), [
    ("http://127.0.0.1:8000/mcp", "http://127.0.0.1:9000"),
    ("http://localhost:8000/mcp", "http://127.0.0.1:9000"),
    ("http://[::1]:8000/mcp", "http://localhost:9000"),
    ("https://10.1.2.3/mcp", "https://10.9.9.9"),
    ("https://169.254.10.10/mcp", "https://169.254.169.254"),
])
def test_an_mcp_server_may_use_an_authorization_server_of_its_own_class(
        mcp: str, issuer: str) -> None:
    http, _ = flow_world(issuer, mcp=mcp)
    with http:
        assert http.post(mcp, content=b"read").status_code == 200


def test_a_loopback_mcp_server_cannot_send_the_client_to_the_private_network() -> None:
    http, _ = flow_world("https://10.0.0.1", mcp="http://127.0.0.1:8000/mcp")
    with http, pytest.raises(AuthorizationFailed, match="private address"):
        http.post("http://127.0.0.1:8000/mcp", content=b"read")


# ------------------------------------------------- the address a connection reached


class _Counting(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # connections stay open, and pooled
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        body = b"{}"
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def loopback() -> Iterator[tuple[int, list[str]]]:
    """A real HTTP server on 127.0.0.1: its port and the paths it was asked for."""
    hits: list[str] = []
    handler = type("Handler", (_Counting,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def rebinding(monkeypatch: pytest.MonkeyPatch) -> str:
    """``as.rebind.test`` resolves to 127.0.0.1 (what a DNS rebinding attack does)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        rebound = host in ("as.rebind.test", b"as.rebind.test")  # anyio passes bytes
        return real("127.0.0.1" if rebound else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return "as.rebind.test"


def test_a_name_resolving_to_loopback_is_refused_before_anything_is_sent(
        loopback: tuple[int, list[str]], rebinding: str) -> None:
    port, hits = loopback
    guard = AddressGuard.for_server(httpx.URL(MCP))
    request = httpx.Request("GET", f"http://{rebinding}:{port}/metadata")
    with httpx.Client() as http:
        with pytest.raises(AuthorizationFailed) as failure:
            http.send(guard.guard(request))
        assert http.get(f"http://{rebinding}:{port}/plain").status_code == 200
    assert "127.0.0.1" in str(failure.value) and rebinding in str(failure.value)
    assert hits == ["/plain"]  # the guarded request never reached the server


@pytest.mark.anyio
async def test_a_name_resolving_to_loopback_is_refused_by_the_async_pump_too(
        loopback: tuple[int, list[str]], rebinding: str) -> None:
    port, hits = loopback
    guard = AddressGuard.for_server(httpx.URL(MCP))
    request = httpx.Request("GET", f"http://{rebinding}:{port}/metadata")
    async with httpx.AsyncClient() as http:
        with pytest.raises(AuthorizationFailed, match=r"127\.0\.0\.1"):
            await http.send(guard.guard(request, asynchronous=True))
    assert hits == []


def test_the_mcp_server_s_own_address_counts(
        loopback: tuple[int, list[str]], rebinding: str) -> None:
    """A name that resolves to loopback for the MCP server too: the server is there."""
    port, hits = loopback
    guard = AddressGuard.for_server(httpx.URL(f"http://{rebinding}:{port}/mcp"))
    with httpx.Client() as http:
        with http.stream("GET", f"http://{rebinding}:{port}/mcp") as mcp:
            guard.learn(mcp)  # as the pumps do, before the body is read
        answer = http.send(guard.guard(httpx.Request("GET", f"http://{rebinding}:{port}/m")))
        guard.check(answer.request, answer)
    assert guard.server == {PUBLIC, LOOPBACK}
    assert hits == ["/mcp", "/m"]


def test_a_pooled_connection_is_checked_on_the_response(
        loopback: tuple[int, list[str]], rebinding: str) -> None:
    port, _ = loopback
    guard = AddressGuard.for_server(httpx.URL(MCP))
    with httpx.Client() as http:
        answer = http.get(f"http://{rebinding}:{port}/opened-without-the-guard")
        with pytest.raises(AuthorizationFailed, match="the address it reached"):
            guard.check(answer.request, answer)


def test_the_whole_flow_refuses_an_authorization_server_that_resolves_to_loopback(
        loopback: tuple[int, list[str]], rebinding: str) -> None:
    """The MCP server is public (a mock transport), its PRM names an authorization
    server whose name resolves to 127.0.0.1 (the real network)."""
    port, hits = loopback
    issuer = f"https://{rebinding}:{port}"
    server = AuthServer(base=issuer)
    resource = Resource(server)
    mounts = {"https://mcp.example.com": httpx.MockTransport(resource.handle)}
    with httpx.Client(mounts=mounts, auth=OAuth(Browser(server))) as http:
        with pytest.raises(AuthorizationFailed, match=r"the address it reached, 127\.0\.0\.1"):
            http.post(MCP, content=b"read")
    assert hits == []  # refused after the TCP connect, before TLS and the request


# ------------------------------------------------- the resource server's side


@pytest.mark.anyio
@pytest.mark.parametrize(("issuer", "jwks_uri", "allowed"), [
    ("https://as.example.com", "https://169.254.169.254/keys", False),
    ("https://as.example.com", "https://10.0.0.1/keys", False),
    ("https://as.example.com", "http://localhost:6379/keys", False),
    ("https://as.example.com", "https://keys.example.net/keys", True),
    ("https://10.0.0.2", "https://10.0.0.1/keys", True),
    ("http://127.0.0.1:9000", "http://localhost:9001/keys", True),
])
async def test_a_jwks_uri_from_the_metadata_follows_the_rule(
        issuer: str, jwks_uri: str, allowed: bool) -> None:
    """The resource server fetches a configured issuer's metadata (trusted as
    configured) and the ``jwks_uri`` it names (a URL from a fetched document)."""
    from mcpkit.auth import Fetcher, VerifierUnavailable
    from mcpkit.auth.server.jwks import KeySource

    seen: list[str] = []

    def route(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if request.url.path.startswith("/.well-known/"):
            return httpx.Response(200, json={"issuer": issuer, "jwks_uri": jwks_uri})
        return httpx.Response(200, json={"keys": []})

    async with httpx.AsyncClient(transport=httpx.MockTransport(route)) as http:
        source = KeySource(Fetcher(client=http, allow_http=True), issuer=issuer)
        with pytest.raises(VerifierUnavailable) as failure:
            await source.key_for("k1", "RS256")
    assert (jwks_uri in seen) is allowed
    if not allowed:
        assert "names jwks_uri" in str(failure.value) and jwks_uri in str(failure.value)
    else:
        assert "no usable key" in str(failure.value)
