"""A small authorization server for the auth tests, served by a real uvicorn on loopback.

It publishes a JWKS (keys made with joserfc in the test process), its RFC 8414 metadata
and an RFC 7662 introspection endpoint that authenticates its client (basic or post).
Each endpoint counts the requests it got, and the JWKS endpoint can be told to
misbehave: hang, answer junk, a huge body, an HTTP error, or a redirect.

Also here: the token makers the tests use -- a JWT signed by one of the keys, and the
hostile ones no library would make (``alg: none``, HS256 keyed with the public key).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import time
from collections import Counter
from typing import Any
from urllib.parse import parse_qsl

import orjson
from joserfc import jwk, jwt

from tests.support.http import answer_lifespan, read_body

CLIENT_ID = "mcp-server"
CLIENT_SECRET = "s3cret:with/odd chars"
RESOURCE = "https://mcp.example.com/mcp"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class IdP:
    """The ASGI app of the test authorization server; its state is reset per test."""

    def __init__(self) -> None:
        self.base = ""  # set once the server listens
        self.rsa = jwk.RSAKey.generate_key(2048, {"kid": "rsa-1"}, private=True)
        self.ec = jwk.ECKey.generate_key("P-256", {"kid": "ec-1"}, private=True)
        self.ed = jwk.OKPKey.generate_key("Ed25519", {"kid": "ed-1"}, private=True)
        self.reset()

    def reset(self) -> None:
        self.published: list[jwk.Key] = [self.rsa, self.ec, self.ed]
        self.jwks_mode = "ok"
        self.introspection_mode = "ok"
        self.hang_seconds = 0.5
        self.hits: Counter[str] = Counter()
        self.introspection: dict[str, dict[str, Any]] = {}
        self.introspection_error: tuple[int, Any] = (400, {"error": "invalid_request"})
        self.introspection_auth: list[str] = []  # "basic" / "post" per request seen
        self.introspection_bodies: list[dict[str, str]] = []

    @property
    def issuer(self) -> str:
        return self.base

    @property
    def jwks_uri(self) -> str:
        return f"{self.base}/jwks"

    @property
    def introspection_endpoint(self) -> str:
        return f"{self.base}/introspect"

    # ------------------------------------------------------------------ tokens

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {"iss": self.issuer, "sub": "alice", "aud": RESOURCE,
                                  "client_id": "client-1", "scope": "notes:read notes:write",
                                  "iat": now, "exp": now + 300}
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def sign(self, claims: dict[str, Any], key: jwk.Key | None = None, alg: str = "RS256",
             **header: Any) -> str:
        key = key or self.rsa
        head = {"alg": alg, "kid": key.kid, **header}
        return jwt.encode({k: v for k, v in head.items() if v is not None}, claims, key,
                          algorithms=[alg])

    def raw(self, header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
        """A compact JWS written by hand: what no library would sign."""
        return ".".join(b64url(part) for part in (orjson.dumps(header), orjson.dumps(claims),
                                                  signature))

    def hs256_with_public_key(self, claims: dict[str, Any]) -> str:
        """HS256 keyed with the RSA public key's PEM: the algorithm-confusion attack."""
        secret = self.rsa.as_pem(private=False)
        head = b64url(orjson.dumps({"alg": "HS256", "kid": self.rsa.kid, "typ": "JWT"}))
        signing_input = f"{head}.{b64url(orjson.dumps(claims))}"
        mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
        return f"{signing_input}.{b64url(mac)}"

    # ------------------------------------------------------------------ ASGI

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send)
            return
        path = scope["path"]
        self.hits[path] += 1
        if path == "/jwks":
            await self._jwks(send)
        elif path == "/.well-known/oauth-authorization-server":
            await _json(send, 200, {"issuer": self.issuer, "jwks_uri": self.jwks_uri,
                                    "introspection_endpoint": self.introspection_endpoint})
        elif path == "/introspect" and self.introspection_mode.startswith("redirect-"):
            status = int(self.introspection_mode.removeprefix("redirect-"))
            await _send(send, status, b"", headers=[(b"location", b"/introspect-moved")])
        elif path in ("/introspect", "/introspect-moved"):
            await self._introspect(scope, receive, send)
        elif path == "/jwks-moved":
            await _json(send, 200, self.key_set())
        else:
            await _json(send, 404, {"error": "not found"})

    async def _jwks(self, send: Any) -> None:
        mode = self.jwks_mode
        if mode == "hang":
            await asyncio.sleep(self.hang_seconds)
            await _json(send, 200, {"keys": []})
        elif mode == "junk":
            await _send(send, 200, b"<html>not a key set</html>", b"text/html")
        elif mode == "huge":
            await _send(send, 200, b'{"keys": [' + b" " * (2 << 20) + b"]}")
        elif mode == "error":
            await _json(send, 500, {"error": "boom"})
        elif mode == "redirect-away":
            await _send(send, 302, b"", headers=[(b"location", b"http://localhost:9/jwks")])
        elif mode == "redirect-loop":
            await _send(send, 302, b"", headers=[(b"location", b"/jwks")])
        elif mode == "redirect-same":
            await _send(send, 302, b"", headers=[(b"location", b"/jwks-moved")])
        else:
            await _json(send, 200, self.key_set())

    def key_set(self) -> dict[str, Any]:
        """The published keys as a JWKS (public parts only)."""
        return {"keys": [k.as_dict(private=False) for k in self.published]}

    async def _introspect(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(receive)
        form = dict(parse_qsl(body.decode()))
        self.introspection_bodies.append(form)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        expected = base64.b64encode(b"mcp-server:s3cret%3Awith%2Fodd+chars").decode()
        if headers.get("authorization") == f"Basic {expected}":
            self.introspection_auth.append("basic")
        elif form.get("client_id") == CLIENT_ID and form.get("client_secret") == CLIENT_SECRET:
            self.introspection_auth.append("post")
        else:
            await _json(send, 401, {"error": "invalid_client"})
            return
        if self.introspection_mode == "hang":
            await asyncio.sleep(self.hang_seconds)
        if self.introspection_mode == "junk":
            await _send(send, 200, b"active", b"text/plain")
        elif self.introspection_mode == "oauth-error":  # an error status and body
            await _json(send, *self.introspection_error)
        elif self.introspection_mode == "list":
            await _json(send, 200, [{"active": True}])
        else:
            await _json(send, 200, self.introspection.get(form.get("token", ""),
                                                          {"active": False}))


async def _json(send: Any, status: int, body: Any) -> None:
    await _send(send, status, orjson.dumps(body))


async def _send(send: Any, status: int, body: bytes, ctype: bytes = b"application/json",
                headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", ctype),
                            (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})
