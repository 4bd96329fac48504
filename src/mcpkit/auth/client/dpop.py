"""DPoP for the OAuth client (RFC 9449): the proof key, its proofs, the servers' nonces.

What: :class:`DPoPKey` holds a client's proof-of-possession key (an EC P-256 key made
for the client by default, or one given as a private JWK) and signs one proof per HTTP
request (RFC 9449 §4.2): header ``typ: dpop+jwt``, ``alg`` and the public ``jwk``;
claims ``jti`` (random), ``htm`` (the method), ``htu`` (the URL without query and
fragment), ``iat``, ``ath`` (the SHA-256 of the access token, on resource requests) and
``nonce`` when a server gave one. :class:`DPoPNonces` remembers the latest
``DPoP-Nonce`` each origin sent (RFC 9449 §8, §9), a bounded map. :class:`Prover` is a
key with the nonces it uses, what the token requests and the resource requests of one
``OAuth`` object share.

Why: a DPoP-bound token (``token_type: DPoP``, ``cnf.jkt`` the key's thumbprint) is
useless to whoever copies it without the private key, unlike a bearer token. The key is
kept with the tokens it is bound to (``Tokens.dpop_jwk``), so a stored token stays
usable by a later process; ``FileTokenStore`` keeps its file 0600.

Failure modes: ``ValueError`` at construction for a key that is not a private
asymmetric key, or an ``alg`` that does not fit it (``HS256``, ``none``, ``ES256`` with
an RSA key). :func:`check_server_algs` raises
:class:`~mcpkit.protocol.errors.AuthorizationFailed` when the authorization server's
``dpop_signing_alg_values_supported`` is given and lacks the key's algorithm (or is not
a list of names), before anything is sent there.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import httpx
import orjson
from joserfc import jwk, jws

from ...protocol.errors import AuthorizationFailed
from ..urls import origin_of
from .challenge import parse_bearer_challenge
from .jwt import import_private_key

PROOF_TYPE = "dpop+jwt"
MAX_NONCES = 64  # origins whose nonce is remembered
MAX_NONCE_LENGTH = 1024


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def token_hash(access_token: str) -> str:
    """``ath``: the base64url SHA-256 of the ASCII access token (RFC 9449 §4.2)."""
    return _b64url(hashlib.sha256(access_token.encode("ascii")).digest())


def htu_of(url: str | httpx.URL) -> str:
    """The ``htu`` of a request to ``url``: the URL without query and fragment."""
    return str(httpx.URL(str(url)).copy_with(query=None, fragment=None))


class DPoPKey:
    """A DPoP proof-of-possession key. ``key``: a private JWK mapping or PEM (RSA, EC or
    Ed25519); ``None`` makes a new EC P-256 key. ``alg``: the JWS algorithm (by default
    the key's own ``alg``, else ES256/ES384/ES512 by curve, Ed25519, RS256)."""

    def __init__(self, key: str | bytes | Mapping[str, Any] | None = None, *,
                 alg: str | None = None) -> None:
        if key is None:
            key = jwk.ECKey.generate_key("P-256", private=True).as_dict(private=True)
        imported, self.alg = import_private_key(key, alg, what="DPoP")
        self._key = imported
        self.public_jwk: dict[str, Any] = {
            k: v for k, v in imported.as_dict(private=False).items()
            if k in ("kty", "crv", "x", "y", "n", "e")}
        self.thumbprint: str = imported.thumbprint()

    def __repr__(self) -> str:  # never show the key
        return f"DPoPKey(alg={self.alg!r}, jkt={self.thumbprint!r})"

    @property
    def private_jwk(self) -> dict[str, Any]:
        """The private key as a JWK with its ``alg``, for a token store."""
        return {**self._key.as_dict(private=True), "alg": self.alg}

    def proof(self, method: str, url: str | httpx.URL, *, access_token: str | None = None,
              nonce: str | None = None) -> str:
        """A fresh proof for ``method url`` (``ath`` of ``access_token`` when given)."""
        claims: dict[str, Any] = {"jti": secrets.token_urlsafe(24), "htm": method.upper(),
                                  "htu": htu_of(url), "iat": int(time.time())}
        if access_token is not None:
            claims["ath"] = token_hash(access_token)
        if nonce is not None:
            claims["nonce"] = nonce
        header = {"typ": PROOF_TYPE, "alg": self.alg, "jwk": self.public_jwk}
        return jws.serialize_compact(header, orjson.dumps(claims), self._key,
                                     algorithms=[self.alg])


class DPoPNonces:
    """The latest ``DPoP-Nonce`` of each origin (at most :data:`MAX_NONCES` origins, the
    least recently used forgotten first)."""

    def __init__(self) -> None:
        self._by_origin: OrderedDict[tuple[str, str, int | None], str] = OrderedDict()

    @staticmethod
    def _origin(url: str | httpx.URL) -> tuple[str, str, int | None] | None:
        try:
            return origin_of(str(url))
        except ValueError:
            return None

    def get(self, url: str | httpx.URL) -> str | None:
        origin = self._origin(url)
        return None if origin is None else self._by_origin.get(origin)

    def learn(self, url: str | httpx.URL, response: httpx.Response) -> bool:
        """Remember the ``DPoP-Nonce`` of ``response`` (from ``url``); whether it had a
        usable one (printable ASCII, RFC 9449 §8.1 ``1*NQCHAR``, bounded length)."""
        nonce = response.headers.get("dpop-nonce")
        origin = self._origin(url)
        if (origin is None or not nonce or len(nonce) > MAX_NONCE_LENGTH
                or not all(0x21 <= ord(c) <= 0x7e and c not in '"\\' for c in nonce)):
            return False
        self._by_origin[origin] = nonce
        self._by_origin.move_to_end(origin)
        while len(self._by_origin) > MAX_NONCES:
            self._by_origin.popitem(last=False)
        return True


class Prover:
    """A :class:`DPoPKey` and the nonces its proofs carry."""

    def __init__(self, key: DPoPKey, nonces: DPoPNonces) -> None:
        self.key = key
        self.nonces = nonces

    def proof(self, method: str, url: str | httpx.URL,
              access_token: str | None = None) -> str:
        return self.key.proof(method, url, access_token=access_token,
                              nonce=self.nonces.get(url))


def check_server_algs(metadata: Mapping[str, Any], key: DPoPKey, issuer: str) -> None:
    """Refuse an authorization server whose ``dpop_signing_alg_values_supported`` (when
    present) does not list ``key.alg`` (RFC 9449 §5.1)."""
    algs = metadata.get("dpop_signing_alg_values_supported")
    if algs is None:
        return
    if not isinstance(algs, list) or key.alg not in algs:
        offered = (", ".join(str(a)[:20] for a in algs[:10]) if isinstance(algs, list)
                   else "a malformed value")
        raise AuthorizationFailed(
            f"the authorization server {issuer!r} does not accept DPoP proofs signed with "
            f"{key.alg} (dpop_signing_alg_values_supported: {offered or 'none'}); give "
            "this client a DPoPKey with one of those algorithms, or turn DPoP off")


def nonce_challenge(response: httpx.Response) -> bool:
    """Whether a resource server's 401 asks for a DPoP nonce (RFC 9449 §9:
    ``WWW-Authenticate: DPoP error="use_dpop_nonce"``)."""
    if response.status_code != 401:
        return False
    challenge = parse_bearer_challenge(response.headers.get("www-authenticate", ""),
                                       scheme="dpop")
    return challenge is not None and challenge.error == "use_dpop_nonce"


def dpop_from_store(jwk_dict: Mapping[str, Any] | None) -> DPoPKey | None:
    """The key kept with stored tokens, or ``None`` when there is none or it is
    unusable (the tokens are then refused by the server and replaced)."""
    if not isinstance(jwk_dict, Mapping):
        return None
    try:
        alg = jwk_dict.get("alg")
        return DPoPKey(jwk_dict, alg=alg if isinstance(alg, str) else None)
    except ValueError:
        return None
