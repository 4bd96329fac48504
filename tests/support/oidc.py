"""oidc-provider (npm, OpenID-certified) as a real authorization server for the auth tests.

``OidcProvider`` runs ``tests/auth/oidc/server.mjs`` on a free port of 127.0.0.1 in its own
process group (stopped by its process id), with the signing keys it is given, and gets
tokens from it over HTTP the way a client does: the client credentials grant with a
``resource`` indicator, the authorization code grant with PKCE (its interactions log in
and consent without a page, see server.mjs), refresh, revocation, and DPoP-bound tokens.

``prepare()`` finds a Node.js and installs the pinned oidc-provider with ``npm ci`` into
the test cache (tests/support/node.py); it raises ``NodeUnavailable`` with the reason.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import orjson
from joserfc import jwk, jws

from .node import cache_dir, find_node, npm_ci

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "auth" / "oidc"
START_SECONDS = 30.0
SECRET = "oidc-test-secret:with/odd chars"
RESOURCE = "https://mcp.example.com/mcp"
OTHER_RESOURCE = "https://other.example.com/mcp"
OPAQUE_RESOURCE = "https://opaque.example.com/mcp"
REDIRECT_URI = "http://127.0.0.1/callback"
SCOPES = "notes:read notes:write"


def prepare() -> tuple[str, Path]:
    """(node, the node_modules holding oidc-provider), installed when missing."""
    cache = cache_dir()
    node = find_node(cache)
    return node, npm_ci(PROJECT, cache)


def new_signing_key(kid: str) -> jwk.RSAKey:
    return jwk.RSAKey.generate_key(2048, {"kid": kid, "use": "sig", "alg": "RS256"},
                                   private=True)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class OidcProvider:
    """One running oidc-provider; a context manager. ``issuer`` once started."""

    def __init__(self, node: str, modules: Path, keys: list[jwk.Key],
                 machine_keys: Sequence[jwk.Key] = ()) -> None:
        self.node = node
        self.modules = modules
        self.keys = keys
        self.machine_keys = list(machine_keys)
        self.issuer = ""
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="mcpkit-oidc."))
        self.http = httpx.Client(timeout=10)

    # ------------------------------------------------------------------ process

    def __enter__(self) -> OidcProvider:
        config: dict[str, Any] = {
            "jwks": {"keys": [k.as_dict(private=True) for k in self.keys]}, "secret": SECRET}
        if self.machine_keys:  # the private_key_jwt client "machine" (public keys only)
            config["machine_jwks"] = {"keys": [k.as_dict(private=False)
                                               for k in self.machine_keys]}
        env = {**os.environ, "OIDC_NODE_MODULES": str(self.modules),
               "OIDC_TEST_CONFIG": orjson.dumps(config).decode(), "NODE_NO_WARNINGS": "1"}
        out, err = self._dir / "stdout", self._dir / "stderr"
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            self.proc = subprocess.Popen([self.node, str(PROJECT / "server.mjs")], env=env,
                                         stdin=subprocess.DEVNULL, stdout=stdout,
                                         stderr=stderr, start_new_session=True)
        deadline = time.monotonic() + START_SECONDS
        while True:
            line = out.read_bytes().split(b"\n")
            if len(line) > 1:  # a complete first line
                ready = orjson.loads(line[0])
                self.issuer, self.port = ready["issuer"], ready["port"]
                return self
            if self.proc.poll() is not None or time.monotonic() > deadline:
                status = self.proc.poll()
                log = self.log()
                self.stop()
                why = (f"exited with status {status}" if status is not None
                       else f"did not start within {START_SECONDS} s")
                raise RuntimeError(f"oidc-provider {why}: {log}")
            time.sleep(0.05)

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        """End the process group started for this server (SIGTERM, then SIGKILL)."""
        self.http.close()
        proc = self.proc
        if proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        shutil.rmtree(self._dir, ignore_errors=True)

    def log(self) -> str:
        return (self._dir / "stderr").read_text(errors="replace")[-4000:]

    # ------------------------------------------------------------------ endpoints

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"

    @property
    def introspection_endpoint(self) -> str:
        return f"{self.issuer}/token/introspection"

    @property
    def revocation_endpoint(self) -> str:
        return f"{self.issuer}/token/revocation"

    def _token(self, form: dict[str, str], client: str = "app",
               headers: dict[str, str] | None = None) -> dict[str, Any]:
        reply = self.http.post(self.token_endpoint, data=form, auth=(client, SECRET),
                               headers=headers)
        assert reply.status_code == 200, (reply.status_code, reply.text, self.log())
        answer: dict[str, Any] = reply.json()
        return answer

    # ------------------------------------------------------------------ grants

    def client_credentials(self, resource: str = RESOURCE, scope: str = SCOPES,
                           client: str = "app", dpop_key: jwk.Key | None = None
                           ) -> dict[str, Any]:
        """The token endpoint's answer to a client credentials grant for ``resource``."""
        headers = {"dpop": self.dpop_proof(dpop_key, self.token_endpoint)} if dpop_key else None
        return self._token({"grant_type": "client_credentials", "resource": resource,
                            "scope": scope}, client, headers)

    def authorization_code(self, resource: str = RESOURCE, scope: str = SCOPES,
                           login: str = "alice") -> dict[str, Any]:
        """An authorization code grant with PKCE (S256) for ``login``'s account, driven
        through the authorization endpoint's redirects; the token endpoint's answer."""
        verifier = b64url(secrets.token_bytes(32))
        challenge = b64url(hashlib.sha256(verifier.encode()).digest())
        state = secrets.token_urlsafe(8)
        params = {"client_id": "app", "response_type": "code", "redirect_uri": REDIRECT_URI,
                  "scope": scope, "resource": resource, "code_challenge": challenge,
                  "code_challenge_method": "S256", "state": state, "login_hint": login}
        with httpx.Client(timeout=10) as browser:  # its own cookies
            url = f"{self.issuer}/auth"
            reply = browser.get(url, params=params)
            for _ in range(10):  # auth -> login -> auth -> consent -> auth -> redirect_uri
                assert reply.status_code in (302, 303), (reply.status_code, reply.text)
                url = urljoin(str(reply.url), reply.headers["location"])
                if url.startswith(REDIRECT_URI):
                    break
                reply = browser.get(url)
            else:
                raise AssertionError("the authorization endpoint never redirected back")
        answer = parse_qs(urlsplit(url).query)
        assert answer["state"] == [state], answer
        assert answer["iss"] == [self.issuer], answer  # RFC 9207
        return self._token({"grant_type": "authorization_code", "code": answer["code"][0],
                            "redirect_uri": REDIRECT_URI, "code_verifier": verifier,
                            "resource": resource})

    def refresh(self, refresh_token: str, resource: str = RESOURCE) -> dict[str, Any]:
        return self._token({"grant_type": "refresh_token", "refresh_token": refresh_token,
                            "resource": resource})

    def revoke(self, token: str, hint: str = "access_token") -> None:
        reply = self.http.post(self.revocation_endpoint, auth=("app", SECRET),
                               data={"token": token, "token_type_hint": hint})
        assert reply.status_code == 200, (reply.status_code, reply.text)

    def introspect(self, token: str) -> dict[str, Any]:
        """What the introspection endpoint says of ``token`` (as the resource server)."""
        reply = self.http.post(self.introspection_endpoint, auth=("mcp-server", SECRET),
                               data={"token": token})
        assert reply.status_code == 200, (reply.status_code, reply.text)
        answer: dict[str, Any] = reply.json()
        return answer

    @staticmethod
    def dpop_proof(key: jwk.Key, url: str, method: str = "POST") -> str:
        """A DPoP proof (RFC 9449 §4.2) signed with ``key`` for ``method url``."""
        header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": key.as_dict(private=False)}
        claims = {"jti": str(uuid.uuid4()), "htm": method, "htu": url, "iat": int(time.time())}
        return jws.serialize_compact(header, orjson.dumps(claims), key, algorithms=["ES256"])
