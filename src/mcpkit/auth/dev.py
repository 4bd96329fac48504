"""Development tokens: protect a server and call it before an identity provider is set up.

``DevIssuer`` is a local token issuer: a P-256 key pair made on first use and kept in a
state directory (the private key readable by its owner only), which signs access tokens
(JWT, ``at+jwt``) with the claims a real provider's carry: issuer, subject, audience,
scopes, issue and expiry times, a unique ``jti``. ``issuer.auth(resource, ...)`` is the
``Auth`` that accepts exactly those tokens for ``resource`` (the audience), with the
verifier a real provider's keys would get (``JWTVerifier``, here on the issuer's public
key instead of a JWKS URL)::

    issuer = DevIssuer()
    server.run("http", port=8765, auth=issuer.auth("http://127.0.0.1:8765/mcp",
                                                  scopes=["notes:read"]))
    token = issuer.issue(audience="http://127.0.0.1:8765/mcp", scopes=["notes:read"])

``mcpkit token --audience URL --scope S`` prints one from the command line (the same
key, the same state directory). The issuer has no authorization endpoint: an OAuth client
that tries to log in finds it unreachable (its name ends in ``.invalid``), so tokens are
handed over (``mcpkit call --token``, an ``Authorization`` header). For development
only: anyone who can read the state directory can mint tokens. With a provider, swap
``issuer.auth(...)`` for ``Auth(JWTVerifier(issuer=..., audience=..., jwks_uri=...),
...)`` (docs/auth.md).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

import orjson
from joserfc import jwk, jwt

from ..storage.local import state_dir as local_state_dir
from .server.config import Auth
from .server.jwt import JWTVerifier
from .server.metadata import ProtectedResource

ISSUER = "https://dev-issuer.invalid"
"""The development issuer's name (``.invalid``: a name that can never resolve)."""
KEY_FILE = "dev_issuer_key.json"
KEY_ID = "dev-1"
LEEWAY = 60
"""Seconds of clock skew the verifier allows: a token expires ``LEEWAY`` s after ``exp``."""


class DevIssuer:
    """A local issuer of access tokens (see the module docstring); ``state_dir``: where
    its key pair is kept (default mcpkit's state directory, ``storage.local``)."""

    def __init__(self, state_dir: str | os.PathLike[str] | None = None, *,
                 issuer: str = ISSUER) -> None:
        self.state_dir = Path(state_dir) if state_dir is not None else local_state_dir()
        self.issuer = issuer
        self._key: jwk.ECKey | None = None

    @property
    def key(self) -> jwk.ECKey:
        """The private key, made (P-256, file mode 0600, never replaced) on first use."""
        if self._key is None:
            path = self.state_dir / KEY_FILE
            if not path.exists():
                self.state_dir.mkdir(parents=True, exist_ok=True)
                made = jwk.ECKey.generate_key("P-256", {"kid": KEY_ID, "alg": "ES256"},
                                              private=True)
                try:  # exclusive: two processes starting together keep one key
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                except FileExistsError:
                    pass
                else:
                    with os.fdopen(fd, "wb") as f:
                        f.write(orjson.dumps(made.as_dict(private=True)))
            self._key = jwk.ECKey.import_key(orjson.loads(path.read_bytes()))
        return self._key

    def jwks(self) -> dict[str, list[dict[str, object]]]:
        """The public key, as a JWKS document."""
        return {"keys": [dict(self.key.as_dict(private=False))]}

    def issue(self, *, audience: str, scopes: Iterable[str] = (), expires_in: int = 3600,
              subject: str = "dev-user", client_id: str = "mcpkit-dev", **claims: object
              ) -> str:
        """A signed access token for ``audience`` (the server's URL) granting ``scopes``,
        expiring ``expires_in`` seconds from now (negative: already expired, for tests);
        ``claims`` are added as they are."""
        if not isinstance(audience, str) or not audience:
            raise ValueError("audience is the URL of the server the token is for")
        granted = list(scopes)
        if any(not isinstance(s, str) or not s or " " in s for s in granted):
            raise ValueError(f"scopes are words without spaces, got {granted!r}")
        now = int(time.time())
        body: dict[str, object] = {
            "iss": self.issuer, "sub": subject, "aud": audience, "client_id": client_id,
            "iat": now, "exp": now + int(expires_in), "jti": uuid.uuid4().hex, **claims}
        if granted:
            body["scope"] = " ".join(granted)
        header = {"alg": "ES256", "kid": KEY_ID, "typ": "at+jwt"}
        return jwt.encode(header, body, self.key)

    def verifier(self, audience: str) -> JWTVerifier:
        """The verifier of this issuer's tokens for ``audience``."""
        return JWTVerifier(issuer=self.issuer, audience=audience, jwks=self.jwks(),
                           leeway=LEEWAY)

    def auth(self, resource: str, *, scopes: Iterable[str] = (),
             required_scopes: Iterable[str] = (), name: str | None = None) -> Auth:
        """``Auth`` for a server at ``resource`` accepting this issuer's tokens:
        ``scopes`` the ones it advertises, ``required_scopes`` those every request needs."""
        supported = list(scopes)
        return Auth(self.verifier(resource),
                    resource=ProtectedResource(resource, [self.issuer],
                                               scopes_supported=supported,
                                               resource_name=name),
                    required_scopes=list(required_scopes))
