"""The authorization probes of an http(s) target: what a server that is an OAuth 2.1
resource server (MCP authorization, RFC 9728, RFC 6750) shows to a client.

What: :func:`probe_auth` sends, once per run, an ``initialize`` POST without credentials
(a protected server answers 401 with a ``WWW-Authenticate: Bearer`` challenge), fetches
the Protected Resource Metadata (the challenge's ``resource_metadata`` URL, else the
path-inserted then the root well-known URL), then each listed authorization server's
metadata (RFC 8414 then OpenID Connect, in the MCP order), and sends the hostile requests:
a token in the query string, malformed ``Authorization`` headers, a junk token. With the
target's token it also sends the token itself, a copy with one character of its signature
changed, and the wrong-audience token when one was given. The judges
(:mod:`~mcpkit.check.matrix.auth`) rule on the :class:`AuthFacts` gathered.

Why here and once: these answers do not depend on the era probed, and none of them needs
a session; the judges of both eras read the same facts.

Safety and bounds: only GETs leave the target's URL (to the metadata documents the server
names), with no header of the target's (no token) on them; every exchange has the
target's timeout as its deadline, bodies are read up to :data:`MAX_BODY` bytes, redirects
are never followed, at most :data:`MAX_SERVERS` authorization servers are asked.
Failure modes: none; every network error is recorded in its :class:`Exchange`.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import orjson

from ..auth.urls import authorization_server_metadata_urls, is_loopback_host
from .model import trim
from .target import Target

MAX_BODY = 256 * 1024
MAX_SERVERS = 3
PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
INIT = {"jsonrpc": "2.0", "id": "auth-probe", "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "mcpkit-check", "version": "1"}}}
MALFORMED = ("Bearer", "Bearer abc def")
"""The malformed Authorization values sent (shown in evidence; tokens are not)."""
_PARAM = re.compile(r'([A-Za-z0-9_\-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^,\s]*)')


@dataclass(slots=True)
class Exchange:
    """One HTTP request of the probe and what came back (``status`` None: no answer)."""

    label: str
    method: str
    url: str
    sent_headers: dict[str, str]
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    error: str = ""

    @property
    def accepted(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def challenge(self) -> dict[str, str] | None:
        return parse_bearer(self.headers.get("www-authenticate", ""))

    def json(self) -> Any:
        try:
            return orjson.loads(self.body)
        except orjson.JSONDecodeError:
            return None

    @property
    def evidence(self) -> str:
        sent = "".join(f"\n  {k}: {v}" for k, v in self.sent_headers.items())
        url = re.sub(r"access_token=[^&]*", "access_token=…", self.url)
        lines = [f"[{self.label}] {self.method} {url}{sent}"]
        if self.status is None:
            lines.append(f"  -> no answer: {self.error}")
            return "\n".join(lines)
        lines.append(f"  -> HTTP {self.status}")
        for name in ("www-authenticate", "content-type", "location"):
            if name in self.headers:
                lines.append(f"  {name}: {self.headers[name]}")
        if self.body:
            lines.append("  " + trim(self.body.decode("utf-8", "replace"), 160))
        return "\n".join(lines)


@dataclass(slots=True)
class ServerMetadata:
    """What was learned about one authorization server named by the metadata."""

    issuer: str
    tries: list[Exchange] = field(default_factory=list)
    document: dict[str, Any] | None = None
    url: str = ""
    problem: str = ""  # why no document was taken

    @property
    def reachable(self) -> bool:
        return any(t.status is not None for t in self.tries)


@dataclass(slots=True)
class AuthFacts:
    """What the authorization probes saw; ``protected`` says whether the rest applies."""

    url: str
    no_credentials: Exchange
    protected: bool = False
    prm_tries: list[Exchange] = field(default_factory=list)
    prm: dict[str, Any] | None = None
    prm_url: str = ""
    servers: list[ServerMetadata] = field(default_factory=list)
    query_token: Exchange | None = None
    malformed: list[Exchange] = field(default_factory=list)
    junk: Exchange | None = None
    with_token: Exchange | None = None
    corrupted: Exchange | None = None
    wrong_audience: Exchange | None = None
    query_token_was_real: bool = False


def parse_bearer(header: str) -> dict[str, str] | None:
    """The parameters of the ``Bearer`` challenge in a ``WWW-Authenticate`` value (an
    empty dict for a bare ``Bearer``), or None when there is no Bearer challenge."""
    match = re.search(r"(?:^|,)\s*bearer(?:\s+|$)", header, re.IGNORECASE)
    if match is None:
        return None
    params: dict[str, str] = {}
    for m in _PARAM.finditer(header, match.end()):
        value = m.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        params.setdefault(m.group(1).lower(), value)
    return params


def canonical(url: str) -> str:
    """``url`` as a resource identifier is compared: scheme and host in lower case, the
    default port and a bare ``/`` path dropped, no fragment. Any scheme is kept, so an
    ``http`` URL off loopback is compared too (and judged elsewhere)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        return url
    if port is not None and port != {"http": 80, "https": 443}.get(scheme):
        host += f":{port}"
    path = "" if parts.path == "/" else parts.path
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{host}{path}{query}"


def secure_or_loopback(url: str) -> bool:
    """Whether ``url`` is https, or http on a loopback host."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme == "https" or (scheme == "http" and is_loopback_host(parts.hostname or ""))


def prm_urls(url: str) -> list[str]:
    """RFC 9728 §3.1: the path-inserted well-known URL of ``url``, then the root one."""
    parts = urlsplit(canonical(url))
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    urls = [f"{base}{PRM_WELL_KNOWN}{path}"] if path else []
    return [*urls, f"{base}{PRM_WELL_KNOWN}"]


def corrupt(token: str) -> str:
    """``token`` with one character of its signature changed: the middle character of
    a JWT's third part (a middle character always changes the decoded bytes, the last one
    may only touch padding bits), else of the whole token."""
    head, dot, sig = token.rpartition(".")
    if not dot or len(sig) < 2:
        head, dot, sig = "", "", token
    i = len(sig) // 2
    swapped = "B" if sig[i] == "A" else "A"
    return f"{head}{dot}{sig[:i]}{swapped}{sig[i + 1:]}"


async def _exchange(client: httpx.AsyncClient, label: str, method: str, url: str,
                    headers: dict[str, str], timeout: float, body: bytes | None = None
                    ) -> Exchange:
    shown = {k: ("Bearer …" if k.lower() == "authorization" and v not in MALFORMED else v)
             for k, v in headers.items() if k.lower() not in ("accept", "content-type")}
    ex = Exchange(label, method, url, shown)
    try:
        with anyio.fail_after(timeout):
            request = client.build_request(method, url, headers=headers, content=body)
            response = await client.send(request, stream=True)
            try:
                ex.status = response.status_code
                ex.headers = {k.lower(): v for k, v in response.headers.items()}
                if not response.headers.get("content-type", "").startswith(
                        "text/event-stream"):
                    async for chunk in response.aiter_bytes():
                        ex.body += chunk
                        if len(ex.body) > MAX_BODY:
                            ex.error = f"body over {MAX_BODY} bytes, not read further"
                            break
            finally:
                await response.aclose()
    except TimeoutError:
        ex.error = f"no complete answer within {timeout} s"
    except (httpx.HTTPError, ValueError) as exc:  # ValueError: a URL httpx cannot use
        ex.error = f"{type(exc).__name__}: {exc}"
    return ex


class _Prober:
    def __init__(self, target: Target, client: httpx.AsyncClient, url: str) -> None:
        self.target = target
        self.client = client
        self.url = url
        self.base = {k: v for k, v in target.headers.items() if k.lower() != "authorization"}

    async def post(self, label: str, authorization: str | None = None,
                   url: str | None = None) -> Exchange:
        headers = {**self.base, "accept": "application/json, text/event-stream",
                   "content-type": "application/json"}
        if authorization is not None:
            headers["Authorization"] = authorization
        return await _exchange(self.client, label, "POST", url or self.url, headers,
                               self.target.timeout, orjson.dumps(INIT))

    async def get(self, label: str, url: str) -> Exchange:
        return await _exchange(self.client, label, "GET", url,
                               {"accept": "application/json"}, self.target.timeout)


async def probe_auth(target: Target) -> AuthFacts | None:
    """Run the authorization probes against ``target`` (None for a stdio target). Call
    inside ``target.session()``."""
    client, url = target._client, target.url
    if client is None or url is None:
        return None
    p = _Prober(target, client, url)
    facts = AuthFacts(url, await p.post("no credentials"))
    first = facts.no_credentials
    facts.protected = first.status == 401 or (first.status == 403
                                             and first.challenge is not None)
    if not facts.protected:
        return facts
    await _metadata(p, facts)
    token = target.bearer
    sep = "&" if urlsplit(url).query else "?"
    query_value = token if token else secrets.token_urlsafe(24)
    facts.query_token_was_real = bool(token)
    facts.query_token = await p.post("token in the query string",
                                     url=f"{url}{sep}access_token={query_value}")
    facts.malformed = [await p.post("Authorization: Bearer (no token)", MALFORMED[0]),
                       await p.post("Authorization: two tokens", MALFORMED[1])]
    facts.junk = await p.post("an invalid token", f"Bearer {secrets.token_urlsafe(32)}")
    if token:
        facts.with_token = await p.post("the token given", f"Bearer {token}")
        facts.corrupted = await p.post("the token, one signature character changed",
                                       f"Bearer {corrupt(token)}")
    if target.wrong_audience_token:
        facts.wrong_audience = await p.post("a token for another audience",
                                            f"Bearer {target.wrong_audience_token}")
    return facts


async def _metadata(p: _Prober, facts: AuthFacts) -> None:
    challenge = facts.no_credentials.challenge or {}
    named = challenge.get("resource_metadata", "")
    candidates = [named] if urlsplit(named).scheme in ("http", "https") else []
    candidates += [u for u in prm_urls(facts.url) if u not in candidates]
    for url in candidates:
        ex = await p.get("protected resource metadata", url)
        facts.prm_tries.append(ex)
        doc = ex.json() if ex.status == 200 else None
        if isinstance(doc, dict):
            facts.prm, facts.prm_url = doc, url
            break
    servers = facts.prm.get("authorization_servers") if facts.prm else None
    if not isinstance(servers, list):
        return
    for issuer in [s for s in servers if isinstance(s, str)][:MAX_SERVERS]:
        facts.servers.append(await _server(p, issuer))


async def _server(p: _Prober, issuer: str) -> ServerMetadata:
    meta = ServerMetadata(issuer)
    try:
        urls = authorization_server_metadata_urls(issuer)
    except ValueError as exc:
        meta.problem = str(exc)
        return meta
    reasons: list[str] = []
    for url in urls:
        ex = await p.get("authorization server metadata", url)
        meta.tries.append(ex)
        doc = ex.json() if ex.status == 200 else None
        if not isinstance(doc, dict):
            reasons.append(f"{url} answered HTTP {ex.status}" if ex.status is not None
                           else f"{url}: {ex.error}")
            continue
        if doc.get("issuer") != issuer:
            reasons.append(f"the metadata at {url} names the issuer {doc.get('issuer')!r}")
            continue
        meta.document, meta.url = doc, url
        return meta
    meta.problem = "; ".join(reasons)
    return meta
