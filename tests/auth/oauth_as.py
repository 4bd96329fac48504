"""A small OAuth 2.1 authorization server for the client tests.

``AuthServer.handle`` maps an ``httpx.Request`` to an ``httpx.Response``, so the same
server answers in process (``httpx.MockTransport``, for the synchronous pump) and under
a real uvicorn on loopback (``asgi``, for end to end runs). It serves RFC 8414 metadata,
an authorization endpoint that redirects straight back with ``code``, ``state`` and
``iss`` (like the conformance suite's mock), a token endpoint that checks the PKCE
verifier, ``redirect_uri``, ``resource`` (equal on both requests) and the client's
authentication, refresh tokens, RFC 7591 registration and a JWKS. It also grants
``client_credentials`` (no refresh token) and authenticates ``private_key_jwt`` clients
(``client_keys``: the assertion's signature, ``iss`` = ``sub`` = the client, ``aud`` =
the issuer, ``exp`` within 5 minutes, a ``jti`` never seen before), and binds tokens to
the key of a DPoP proof sent with the token request (RFC 9449, knobs ``dpop_*``).
Access tokens are JWTs for the requested resource. Knobs on the instance make it
misbehave one way at a time; every request is counted per path and the authorization and
token requests are kept.

For the grants without a user it also authenticates ``client_secret_jwt`` clients (an
HMAC assertion over the secret), grants ``urn:ietf:params:oauth:grant-type:jwt-bearer``
for assertions signed by an issuer in ``assertion_keys`` (``aud`` = this issuer, not
expired; an ID-JAG, ``typ`` ``oauth-id-jag+jwt``, must also name the authenticated
client and the requested resource; a workload's JWT needs no client authentication),
acts as an enterprise IdP with the RFC 8693 token exchange (an ID token in ``id_tokens``
for an ID-JAG signed with its key), and revokes tokens (RFC 7009, ``/revoke``).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, unquote_plus, urlencode

import httpx
import orjson
from joserfc import jwk, jws, jwt
from joserfc.errors import JoseError

from tests.support.http import answer_lifespan, read_body

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(
        b"=").decode()


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    resource: str | None
    scopes: tuple[str, ...]


@dataclass
class AuthServer:
    base: str = "http://127.0.0.1:1"
    key: jwk.RSAKey = field(default_factory=lambda: jwk.RSAKey.generate_key(
        2048, {"kid": "as-1"}, private=True))
    # knobs
    pkce_methods: list[str] | None = field(default_factory=lambda: ["S256"])
    auth_methods: list[str] = field(default_factory=lambda: ["none"])
    iss_supported: bool | None = True
    iss_mode: str = "correct"  # correct / wrong / omit
    state_mode: str = "echo"  # echo / wrong / omit
    dcr: bool = True
    cimd: bool = False
    scopes_supported: list[str] | None = None
    grant_only: tuple[str, ...] | None = None  # scopes granted whatever is asked
    expires_in: int = 3600
    refresh: bool = True
    clients: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # id -> secret, method
    client_keys: dict[str, Any] = field(default_factory=dict)  # id -> public key (private_key_jwt)
    grant_types: list[str] | None = field(default_factory=lambda: [
        "authorization_code", "refresh_token", "client_credentials"])
    token_answer: Callable[[], httpx.Response] | None = None  # replaces every token answer
    assertion_keys: dict[str, Any] = field(default_factory=dict)  # iss -> key (jwt-bearer)
    id_tokens: dict[str, str] = field(default_factory=dict)  # IdP: ID token -> subject
    jag_clients: dict[str, str] = field(default_factory=dict)  # IdP: client -> client at AS
    issued_token_type: str = ID_JAG  # IdP: what the exchange answer says it issued
    revocation: bool = False
    revoked: list[tuple[str, str]] = field(default_factory=list)  # (hint, token)
    # DPoP (RFC 9449): a proof binds the token (cnf.jkt, token_type DPoP) unless
    # dpop_bearer; dpop_algs is published as is (None: left out); dpop_nonce is required
    # in proofs (a 400 use_dpop_nonce hands it out), dpop_nonce_always refuses every one
    dpop_algs: Any = None
    dpop_nonce: str | None = None
    dpop_nonce_always: bool = False
    dpop_bearer: bool = False
    # what it saw
    hits: Counter[str] = field(default_factory=Counter)
    paths: list[str] = field(default_factory=list)
    request_headers: list[httpx.Headers] = field(default_factory=list)
    authorizations: list[dict[str, str]] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    registrations: list[dict[str, Any]] = field(default_factory=list)
    grants: dict[str, Grant] = field(default_factory=dict)
    refresh_tokens: dict[str, Grant] = field(default_factory=dict)
    jtis: set[str] = field(default_factory=set)
    assertion_problems: list[str] = field(default_factory=list)
    dpop_proofs: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)

    @property
    def issuer(self) -> str:
        return self.base

    def metadata(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.base}/authorize",
            "token_endpoint": f"{self.base}/token",
            "jwks_uri": f"{self.base}/jwks",
            "response_types_supported": ["code"],
            "token_endpoint_auth_methods_supported": self.auth_methods,
        }
        if self.grant_types is not None:
            doc["grant_types_supported"] = self.grant_types
        if self.pkce_methods is not None:
            doc["code_challenge_methods_supported"] = self.pkce_methods
        if self.iss_supported is not None:
            doc["authorization_response_iss_parameter_supported"] = self.iss_supported
        if self.dcr:
            doc["registration_endpoint"] = f"{self.base}/register"
        if self.cimd:
            doc["client_id_metadata_document_supported"] = True
        if self.scopes_supported is not None:
            doc["scopes_supported"] = self.scopes_supported
        if self.revocation:
            doc["revocation_endpoint"] = f"{self.base}/revoke"
        if self.dpop_algs is not None:
            doc["dpop_signing_alg_values_supported"] = self.dpop_algs
        return doc

    # ------------------------------------------------------------------ endpoints

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.hits[path] += 1
        self.paths.append(path)
        self.request_headers.append(request.headers)
        if path == "/.well-known/oauth-authorization-server":
            return httpx.Response(200, json=self.metadata())
        if path == "/jwks":
            return httpx.Response(200, json={"keys": [self.key.as_dict(private=False)]})
        if path == "/authorize":
            return self._authorize(dict(request.url.params))
        if path == "/token":
            return self._token(request)
        if path == "/revoke" and self.revocation:
            return self._revoke(request)
        if path == "/register" and self.dcr:
            return self._register(orjson.loads(request.content))
        return httpx.Response(404, json={"error": "not_found"})

    def _authorize(self, query: dict[str, str]) -> httpx.Response:
        self.authorizations.append(query)
        client_id = query.get("client_id", "")
        if client_id not in self.clients and not (self.cimd and client_id.startswith("https://")):
            return httpx.Response(400, json={"error": "invalid_client"})
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return httpx.Response(400, json={"error": "invalid_request"})
        code = secrets.token_urlsafe(16)
        requested = tuple(query.get("scope", "").split())
        self.grants[code] = Grant(client_id, query["redirect_uri"], query["code_challenge"],
                                  query.get("resource"), self.grant_only if
                                  self.grant_only is not None else requested)
        back = {"code": code}
        if self.state_mode == "echo":
            back["state"] = query.get("state", "")
        elif self.state_mode == "wrong":
            back["state"] = "not-the-state"
        if self.iss_mode == "correct":
            back["iss"] = self.issuer
        elif self.iss_mode == "wrong":
            back["iss"] = "https://evil.example.com"
        location = f"{query['redirect_uri']}?{urlencode(back)}"
        return httpx.Response(302, headers={"location": location})

    def _client_of(self, request: httpx.Request, form: dict[str, str]) -> str | None:
        """The authenticated client id, by the method it registered with."""
        header = request.headers.get("authorization", "")
        if header.startswith("Basic "):
            name, _, password = base64.b64decode(header[6:]).decode().partition(":")
            client_id, secret = unquote_plus(name), unquote_plus(password)
            method = "client_secret_basic"
        elif "client_assertion" in form or "client_assertion_type" in form:
            return self._assertion_client(form)
        elif "client_secret" in form:
            client_id, secret, method = form.get("client_id", ""), form["client_secret"], \
                "client_secret_post"
        else:
            client_id, secret, method = form.get("client_id", ""), None, "none"
        known = self.clients.get(client_id)
        if self.cimd and client_id.startswith("https://") and method == "none":
            return client_id  # a client ID metadata document (not fetched here)
        if known is None or known != (secret, method):
            return None
        return client_id

    def _assertion_client(self, form: dict[str, str]) -> str | None:
        """The client a ``private_key_jwt`` assertion proves, or None (and why, kept)."""
        def refuse(why: str) -> str | None:
            self.assertion_problems.append(why)
            return None

        if form.get("client_assertion_type") != ASSERTION_TYPE:
            return refuse("client_assertion_type")
        client_id = form.get("client_id", "")
        key = self.client_keys.get(client_id)
        secret, method = self.clients.get(client_id, (None, ""))
        if method == "client_secret_jwt" and secret:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                key = jwk.OctKey.import_key(secret.encode())
        elif key is None or method != "private_key_jwt":
            return refuse("unknown client")
        try:
            token = jwt.decode(form.get("client_assertion", ""), key, algorithms=[
                "ES256", "ES384", "RS256", "PS256", "Ed25519", "HS256", "HS384", "HS512"])
        except (JoseError, ValueError) as exc:
            return refuse(f"signature: {exc}")
        claims, now = token.claims, time.time()
        if claims.get("iss") != client_id or claims.get("sub") != client_id:
            return refuse("iss/sub")
        if claims.get("aud") != self.issuer:
            return refuse("aud")
        exp = claims.get("exp")
        if not isinstance(exp, int) or not now - 5 < exp < now + 300:
            return refuse("exp")
        jti = claims.get("jti")
        if not isinstance(jti, str) or not jti or jti in self.jtis:
            return refuse("jti reused")
        self.jtis.add(jti)
        return client_id

    def _token(self, request: httpx.Request) -> httpx.Response:
        form = dict(parse_qsl(request.content.decode()))
        self.token_requests.append(form)
        anonymous = (form.get("grant_type") == JWT_BEARER and not form.get("client_id")
                     and "authorization" not in request.headers)
        client_id = "" if anonymous else self._client_of(request, form)
        if client_id is None:
            return httpx.Response(401, json={"error": "invalid_client"})
        if self.token_answer is not None:
            return self.token_answer()
        jkt: str | None = None
        if "dpop" in request.headers:
            bound = self._dpop(request)
            if isinstance(bound, httpx.Response):
                return bound
            jkt = bound
        grant: Grant | None
        if form.get("grant_type") == TOKEN_EXCHANGE:
            return self._exchange(client_id, form)
        if form.get("grant_type") == JWT_BEARER:
            found = self._bearer_grant(client_id, form)
            if isinstance(found, httpx.Response):
                return found
            grant, client_id = found
        elif form.get("grant_type") == "client_credentials":
            if self.grant_types is not None and "client_credentials" not in self.grant_types:
                return httpx.Response(400, json={"error": "unsupported_grant_type"})
            grant = Grant(client_id, "", "", form.get("resource"),
                          tuple(form.get("scope", "").split()) if self.grant_only is None
                          else self.grant_only)
        elif form.get("grant_type") == "authorization_code":
            grant = self.grants.pop(form.get("code", ""), None)
            if grant is None or grant.client_id != client_id:
                return httpx.Response(400, json={"error": "invalid_grant"})
            if s256(form.get("code_verifier", "")) != grant.challenge:
                return httpx.Response(400, json={"error": "invalid_grant",
                                                 "error_description": "PKCE failed"})
            if form.get("redirect_uri") != grant.redirect_uri or \
                    form.get("resource") != grant.resource:
                return httpx.Response(400, json={"error": "invalid_grant"})
        elif form.get("grant_type") == "refresh_token":
            grant = self.refresh_tokens.pop(form.get("refresh_token", ""), None)
            if grant is None or grant.client_id != client_id or \
                    form.get("resource") != grant.resource:
                return httpx.Response(400, json={"error": "invalid_grant"})
        else:
            return httpx.Response(400, json={"error": "unsupported_grant_type"})
        now = int(time.time())
        assert grant is not None
        subject = {"client_credentials": client_id, JWT_BEARER: grant.redirect_uri}.get(
            form.get("grant_type", ""), "alice")
        claims = {"iss": self.issuer, "sub": subject, "aud": grant.resource,
                  "client_id": client_id, "scope": " ".join(grant.scopes), "iat": now,
                  "exp": now + self.expires_in, "jti": secrets.token_hex(8)}
        if jkt is not None and not self.dpop_bearer:
            claims["cnf"] = {"jkt": jkt}
        token = jwt.encode({"alg": "RS256", "kid": self.key.kid}, claims, self.key,
                           algorithms=["RS256"])
        answer: dict[str, Any] = {"access_token": token, "token_type": "DPoP" if "cnf" in claims
                                  else "Bearer",
                                  "expires_in": self.expires_in,
                                  "scope": " ".join(grant.scopes)}
        if self.refresh and form.get("grant_type") not in ("client_credentials", JWT_BEARER):
            rotated = secrets.token_urlsafe(16)
            self.refresh_tokens[rotated] = grant
            answer["refresh_token"] = rotated
        return httpx.Response(200, json=answer)

    def _bearer_grant(self, client_id: str, form: dict[str, str]
                      ) -> tuple[Grant, str] | httpx.Response:
        """RFC 7523 §2.1: the grant (its subject in ``redirect_uri``) and the client."""
        def refuse(why: str) -> httpx.Response:
            return httpx.Response(400, json={"error": "invalid_grant",
                                             "error_description": why})

        if self.grant_types is not None and JWT_BEARER not in self.grant_types:
            return httpx.Response(400, json={"error": "unsupported_grant_type"})
        assertion = form.get("assertion", "")
        for key in self.assertion_keys.values():
            try:
                token = jwt.decode(assertion, key, algorithms=["ES256", "RS256"])
                break
            except (JoseError, ValueError):
                continue
        else:
            return refuse("the assertion is not signed by a trusted issuer")
        claims, now = token.claims, time.time()
        if claims.get("aud") != self.issuer:
            return refuse("the assertion's audience is not this server")
        if not isinstance(claims.get("exp"), int) or claims["exp"] < now:
            return refuse("the assertion has expired")
        if token.header.get("typ") == "oauth-id-jag+jwt":
            if not client_id or claims.get("client_id") != client_id:
                return refuse("the ID-JAG names another client")
            if claims.get("resource") != form.get("resource"):
                return refuse("the ID-JAG is for another resource")
        elif not client_id:
            client_id = f"workload:{claims.get('sub')}"
        scopes = tuple(form.get("scope", "").split())
        return Grant(client_id, str(claims.get("sub")), "", form.get("resource"),
                     scopes), client_id

    def _exchange(self, client_id: str, form: dict[str, str]) -> httpx.Response:
        """RFC 8693 at the IdP: an ID token for an ID-JAG."""
        subject = self.id_tokens.get(form.get("subject_token", ""))
        if form.get("subject_token_type") != ID_TOKEN or subject is None:
            return httpx.Response(400, json={"error": "invalid_grant",
                                             "error_description": "unknown ID token"})
        if form.get("requested_token_type") != ID_JAG or not form.get("audience") \
                or not form.get("resource"):
            return httpx.Response(400, json={"error": "invalid_request"})
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": subject, "aud": form["audience"],
                  "resource": form["resource"], "scope": form.get("scope", ""),
                  "client_id": self.jag_clients.get(client_id, client_id), "iat": now,
                  "exp": now + 300, "jti": secrets.token_hex(8)}
        grant = jwt.encode({"alg": "RS256", "kid": self.key.kid, "typ": "oauth-id-jag+jwt"},
                           claims, self.key, algorithms=["RS256"])
        return httpx.Response(200, json={"access_token": grant, "token_type": "N_A",
                                         "issued_token_type": self.issued_token_type,
                                         "expires_in": 300})

    def _revoke(self, request: httpx.Request) -> httpx.Response:
        """RFC 7009: 200 whether or not the token was known; a refresh token is dropped."""
        form = dict(parse_qsl(request.content.decode()))
        if self._client_of(request, form) is None:
            return httpx.Response(401, json={"error": "invalid_client"})
        token = form.get("token", "")
        self.revoked.append((form.get("token_type_hint", ""), token))
        self.refresh_tokens.pop(token, None)
        return httpx.Response(200)

    def _dpop(self, request: httpx.Request) -> str | httpx.Response:
        """The thumbprint of the key of a token request's DPoP proof (its signature,
        ``htm``, ``htu`` checked, kept in ``dpop_proofs``), or the refusal."""
        try:
            registry = jws.JWSRegistry()
            registry.max_header_length = 4096  # an RSA key's jwk does not fit in 512
            signed = jws.extract_compact(request.headers["dpop"].encode(), registry=registry)
            header = signed.headers()
            key = jwk.import_key(header["jwk"])
            if not jws.validate_compact(signed, key, algorithms=[header["alg"]]):
                raise ValueError("signature")
            claims = orjson.loads(signed.payload)
        except (JoseError, ValueError, KeyError, TypeError) as exc:
            return httpx.Response(400, json={"error": "invalid_dpop_proof",
                                             "error_description": str(exc)})
        self.dpop_proofs.append((header, claims))
        if claims.get("htm") != "POST" or claims.get("htu") != f"{self.base}/token":
            return httpx.Response(400, json={"error": "invalid_dpop_proof"})
        if self.dpop_nonce is not None and (
                self.dpop_nonce_always or claims.get("nonce") != self.dpop_nonce):
            return httpx.Response(400, json={"error": "use_dpop_nonce"},
                                  headers={"dpop-nonce": self.dpop_nonce})
        return key.thumbprint()

    def _register(self, body: dict[str, Any]) -> httpx.Response:
        self.registrations.append(body)
        method = body.get("token_endpoint_auth_method", "none")
        client_id = f"client-{len(self.registrations)}"
        secret = None if method == "none" else secrets.token_urlsafe(12) + ":/ +"
        self.clients[client_id] = (secret, method)
        answer = {"client_id": client_id, "token_endpoint_auth_method": method,
                  "redirect_uris": body.get("redirect_uris", [])}
        if secret:
            answer["client_secret"] = secret
        return httpx.Response(201, json=answer)

    # ------------------------------------------------------------------ ASGI

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send)
            return
        body = await read_body(receive)
        query = scope.get("query_string", b"").decode()
        url = f"{self.base}{quote(scope['path'])}" + (f"?{query}" if query else "")
        request = httpx.Request(scope["method"], url, content=body,
                                headers=[(k, v) for k, v in scope["headers"]])
        response = self.handle(request)
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": [(k.encode(), v.encode()) for k, v in response.headers.items()
                                if k != "content-length"]
                    + [(b"content-length", str(len(response.content)).encode())]})
        await send({"type": "http.response.body", "body": response.content})

