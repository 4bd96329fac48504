"""``private_key_jwt`` and ``client_secret_jwt`` client authentication (RFC 7523 §2.2,
OpenID Connect Core §9).

What: :class:`PrivateKeyJWT` holds a client's private key (PEM or JWK, RSA, EC or
Ed25519) and signs one client assertion per token request: ``iss`` = ``sub`` = the
``client_id``, ``aud`` = the authorization server's issuer identifier, a random
``jti``, ``iat`` now and ``exp`` ``lifetime`` seconds later (60 by default). The token
request then carries ``client_assertion_type``
``urn:ietf:params:oauth:client-assertion-type:jwt-bearer`` and ``client_assertion``
(``tokens``). :func:`secret_assertion` makes the same assertion for
``client_secret_jwt``, signed with HMAC (HS256 by default) over the client secret.

Why ``aud`` is the issuer: RFC 7523 allows the token endpoint URL, but an audience that
is an endpoint can be confused across servers that share one; the update of RFC 7523
(draft-ietf-oauth-rfc7523bis) and the MCP client credentials extension's conformance
scenario use the issuer identifier, which every server accepts (oidc-provider included).

Failure modes: ``ValueError`` when made with something that is not a private
asymmetric key (a public key, a symmetric ``oct`` key, unreadable PEM), or an ``alg``
that does not fit the key (``ES256`` with an RSA key, ``HS256``, ``none``).
"""

from __future__ import annotations

import secrets
import time
import warnings
from collections.abc import Mapping
from typing import Any

from joserfc import jwk, jwt
from joserfc.errors import JoseError

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

_Key = jwk.RSAKey | jwk.ECKey | jwk.OKPKey
_CLASSES: dict[str, type[_Key]] = {"RSA": jwk.RSAKey, "EC": jwk.ECKey, "OKP": jwk.OKPKey}
_EC_ALGS = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512", "secp256k1": "ES256K"}
_RSA_ALGS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
HMAC_ALGS = ("HS256", "HS384", "HS512")


def _claims(client_id: str, audience: str, lifetime: int) -> dict[str, Any]:
    """The claims of a client assertion (RFC 7523 §3): the client is issuer and subject."""
    now = int(time.time())
    return {"iss": client_id, "sub": client_id, "aud": audience,
            "jti": secrets.token_urlsafe(24), "iat": now, "exp": now + lifetime}


def secret_assertion(client_id: str, secret: str, audience: str, alg: str = "HS256",
                     lifetime: int = 60) -> str:
    """A ``client_secret_jwt`` assertion: the claims of :meth:`PrivateKeyJWT.assertion`,
    MACed with ``secret`` (``alg``: HS256, HS384 or HS512). A short secret is the
    authorization server's choice, so joserfc's key-size warning is silenced."""
    if alg not in HMAC_ALGS:
        raise ValueError(f"client_secret_jwt signs with {', '.join(HMAC_ALGS)}, "
                         f"not {alg[:20]!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        key = jwk.OctKey.import_key(secret.encode())
        return jwt.encode({"alg": alg, "typ": "JWT"}, _claims(client_id, audience, lifetime),
                          key, algorithms=[alg])


def _import(key: str | bytes | Mapping[str, Any]) -> _Key:
    if isinstance(key, Mapping):
        kind = _CLASSES.get(str(key.get("kty")))
        if kind is None:
            raise ValueError(f"a private_key_jwt key must be RSA, EC or OKP, not "
                             f"{str(key.get('kty'))[:20]!r}")
        try:
            return kind.import_key(dict(key))
        except (JoseError, ValueError, TypeError) as exc:
            raise ValueError(f"unreadable {kind.__name__}: {exc}") from None
    for kind in _CLASSES.values():
        try:
            return kind.import_key(key)
        except (JoseError, ValueError, TypeError):
            continue
    raise ValueError("the private key is not an RSA, EC or Ed25519 key in PEM")


def _default_alg(key: _Key) -> str:
    if isinstance(key, jwk.ECKey):
        return _EC_ALGS.get(str(key.get("crv")), "ES256")
    if isinstance(key, jwk.OKPKey):
        return "Ed25519"  # RFC 9864: the fully specified name, not the deprecated EdDSA
    return "RS256"


def _fits(key: _Key, alg: str) -> bool:
    if isinstance(key, jwk.ECKey):
        return _EC_ALGS.get(str(key.get("crv"))) == alg
    if isinstance(key, jwk.OKPKey):
        return alg in ("EdDSA", "Ed25519") and key.get("crv") == "Ed25519"
    return alg in _RSA_ALGS


def import_private_key(key: str | bytes | Mapping[str, Any], alg: str | None, *,
                       what: str) -> tuple[_Key, str]:
    """(the private key, the algorithm to sign with): ``alg``, else the key's own, else
    one by key type. ``ValueError`` for a symmetric or public key, unreadable PEM, or an
    ``alg`` that does not fit the key; ``what`` names the use in the message."""
    if isinstance(key, Mapping) and key.get("kty") == "oct":
        raise ValueError(f"a symmetric (oct) key cannot sign for {what}; give a private "
                         "RSA, EC or Ed25519 key")
    imported = _import(key)
    if not imported.is_private:
        raise ValueError(f"{what} needs the private key, not the public one")
    own = imported.get("alg")
    chosen = alg or (own if isinstance(own, str) else None) or _default_alg(imported)
    if not _fits(imported, chosen):
        raise ValueError(f"alg {chosen[:20]!r} does not fit this {imported.key_type} key")
    return imported, chosen


class PrivateKeyJWT:
    """A client's signing key for ``private_key_jwt``. ``key``: a private key in PEM
    (``str`` or ``bytes``) or as a JWK mapping; ``alg``: the JWS algorithm (by default
    the key's own ``alg``, else ES256/ES384/ES512 by curve, Ed25519, RS256); ``kid``: put
    in the header (by default the JWK's ``kid``, when it has one); ``lifetime``: seconds
    each assertion is valid."""

    def __init__(self, key: str | bytes | Mapping[str, Any], *, alg: str | None = None,
                 kid: str | None = None, lifetime: int = 60) -> None:
        imported, chosen = import_private_key(key, alg, what="private_key_jwt")
        if lifetime <= 0:
            raise ValueError("lifetime must be > 0")
        own_kid = imported.get("kid")
        self._key = imported
        self.alg = chosen
        self.kid = kid if kid is not None else own_kid if isinstance(own_kid, str) else None
        self.lifetime = lifetime

    def __repr__(self) -> str:  # never show the key
        return f"PrivateKeyJWT(alg={self.alg!r}, kid={self.kid!r})"

    def assertion(self, client_id: str, audience: str) -> str:
        """A fresh signed client assertion for ``client_id``, addressed to ``audience``."""
        header: dict[str, Any] = {"alg": self.alg, "typ": "JWT"}
        if self.kid:
            header["kid"] = self.kid
        return jwt.encode(header, _claims(client_id, audience, self.lifetime), self._key,
                          algorithms=[self.alg])
