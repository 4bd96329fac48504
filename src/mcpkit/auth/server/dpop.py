"""``DPoPChecker``: DPoP proofs checked by a resource server (RFC 9449 §4.3, §7, §9).

What: :meth:`DPoPChecker.check` judges the one proof sent with a request that presents
a DPoP-bound token (``Authorization: DPoP <token>``, the token's ``cnf.jkt`` known):

- at most :data:`MAX_PROOF_LENGTH` characters, a compact JWS, no ``crit``/``b64``;
- header ``typ: dpop+jwt``, an ``alg`` on the allow-list (asymmetric only: never
  ``none`` nor an HMAC), a public ``jwk`` of a type that fits it (no private members);
- the signature checked with that ``jwk``; claims ``jti`` (a string), ``htm`` equal to
  the request's method, ``htu`` equal to the request's URL (scheme and host compared
  without case, the default port dropped, query and fragment ignored), ``iat`` no older
  than ``max_age`` and no further ahead than ``leeway`` seconds, ``ath`` the SHA-256 of
  the token;
- the key's RFC 7638 thumbprint equal to the token's ``cnf.jkt``;
- with ``nonces=True``, a ``nonce`` this checker issued less than ``nonce_lifetime``
  seconds ago (stateless: a timestamp and its HMAC under a per-process secret);
- the ``jti`` not seen before with that key within the window (a bounded map of their
  hashes, ``max_proofs`` entries, each kept until its proof would be too old anyway).

Why: a DPoP-bound token is worth nothing without the private key, so only a request
that proves possession of it, freshly and for this very method and URL, may use it.

Failure modes: :class:`~mcpkit.protocol.errors.InvalidDPoPProof` (401
``invalid_dpop_proof``) for every failed check, its description saying which without
echoing the proof; :class:`~mcpkit.protocol.errors.UseDPoPNonce` (401
``use_dpop_nonce``) with a fresh nonce when one is required and missing or stale.
``ValueError`` at construction for an algorithm that is unknown or not asymmetric.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import struct
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from joserfc import jwk, jws
from joserfc.errors import JoseError

from ...protocol.errors import InvalidDPoPProof, UseDPoPNonce
from .cache import TokenCache
from .jwt import DEFAULT_ALGORITHMS, asymmetric, verified_claims

PROOF_ALGORITHMS = DEFAULT_ALGORITHMS
"""The proof algorithms accepted by default: the asymmetric ones access tokens may be
signed with (``EdDSA`` only on request, as for tokens)."""

MAX_PROOF_LENGTH = 8192
MAX_JTI_LENGTH = 256
_Key = jwk.ECKey | jwk.RSAKey | jwk.OKPKey
_KEY_TYPES: dict[str, type[_Key]] = {"EC": jwk.ECKey, "RSA": jwk.RSAKey, "OKP": jwk.OKPKey}
_PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")
_CURVES = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521", "Ed25519": "Ed25519",
           "EdDSA": "Ed25519", "ES256K": "secp256k1"}
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _normal_url(url: str) -> tuple[str, str, int | None, str] | None:
    """(scheme, host, port, path) compared for ``htu`` (RFC 3986 §6.2.2-6.2.3
    normalisation), or None for a URL that is not absolute http(s)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    if port == _DEFAULT_PORTS[scheme]:
        port = None
    return scheme, parts.hostname.lower(), port, unquote(parts.path) or "/"


class DPoPChecker:
    """Checks DPoP proofs (see the module docstring). ``algorithms``: the allow-list,
    also announced in the ``DPoP algs=...`` challenge. ``max_age``/``leeway``: how old
    and how far in the future (seconds) a proof's ``iat`` may be. ``nonces``: require
    server-issued nonces, each valid ``nonce_lifetime`` seconds. ``max_proofs``: the
    ``jti``s remembered at most (least recently used forgotten first)."""

    def __init__(self, *, algorithms: Iterable[str] = PROOF_ALGORITHMS,
                 max_age: float = 300.0, leeway: float = 60.0, nonces: bool = False,
                 nonce_lifetime: float = 300.0, max_proofs: int = 100_000) -> None:
        self.algorithms = asymmetric(algorithms, "a DPoP proof is signed with the client's "
                                     "private key")
        if max_age <= 0 or leeway < 0 or nonce_lifetime <= 0:
            raise ValueError("max_age and nonce_lifetime must be > 0, leeway >= 0")
        self.max_age = max_age
        self.leeway = leeway
        self.nonces = nonces
        self.nonce_lifetime = nonce_lifetime
        self._seen: TokenCache[bool] = TokenCache(max_proofs)
        self._secret = secrets.token_bytes(32)
        self._registries = {alg: _registry([alg]) for alg in self.algorithms}
        self._reader = _registry(list(self.algorithms))

    def __repr__(self) -> str:
        return (f"DPoPChecker(algorithms={list(self.algorithms)!r}, max_age={self.max_age}, "
                f"nonces={self.nonces})")

    # ------------------------------------------------------------------------ nonces

    def new_nonce(self, now: float | None = None) -> str:
        """A nonce for ``DPoP-Nonce``: the time and its HMAC, valid ``nonce_lifetime``."""
        stamp = struct.pack(">Q", int(time.time() if now is None else now))
        return _b64url(stamp + hmac.new(self._secret, stamp, hashlib.sha256).digest()[:16])

    def _nonce_ok(self, nonce: Any, now: float) -> bool:
        if not isinstance(nonce, str) or len(nonce) != 32:
            return False
        try:
            raw = base64.urlsafe_b64decode(nonce + "=" * (-len(nonce) % 4))
        except ValueError:
            return False
        stamp, mac = raw[:8], raw[8:]
        expected = hmac.new(self._secret, stamp, hashlib.sha256).digest()[:16]
        if len(raw) != 24 or not hmac.compare_digest(mac, expected):
            return False
        issued: int = struct.unpack(">Q", stamp)[0]
        return issued <= now + 1 and now - issued <= self.nonce_lifetime

    # ------------------------------------------------------------------------ proofs

    def check(self, proof: str, *, method: str, url: str, access_token: str, jkt: str,
              now: float | None = None) -> None:
        """Accept ``proof`` for ``method url`` presenting ``access_token`` bound to the
        key thumbprint ``jkt``, or raise (see the module docstring)."""
        now = time.time() if now is None else now
        if len(proof) > MAX_PROOF_LENGTH:
            raise InvalidDPoPProof("the DPoP proof is too long")
        claims, key = self._verified(proof)
        if claims.get("htm") != method:
            raise InvalidDPoPProof("the DPoP proof's htm is not this request's method")
        htu = claims.get("htu")
        if not isinstance(htu, str) or _normal_url(htu) != _normal_url(url):
            raise InvalidDPoPProof("the DPoP proof's htu is not this request's URL")
        iat = claims.get("iat")
        if not isinstance(iat, int | float) or isinstance(iat, bool):
            raise InvalidDPoPProof("the DPoP proof has no iat")
        if iat < now - self.max_age or iat > now + self.leeway:
            raise InvalidDPoPProof("the DPoP proof's iat is outside the accepted window; "
                                   "make a new proof with the current time")
        expected = _b64url(hashlib.sha256(access_token.encode("ascii")).digest())
        if not isinstance(claims.get("ath"), str) or not hmac.compare_digest(
                claims["ath"].encode(), expected.encode()):  # bytes: any text compares
            raise InvalidDPoPProof("the DPoP proof's ath is not the hash of the token")
        if not hmac.compare_digest(key.thumbprint().encode(), jkt.encode()):
            raise InvalidDPoPProof("the DPoP proof is signed by a key the token is not "
                                   "bound to")
        if self.nonces and not self._nonce_ok(claims.get("nonce"), now):
            raise UseDPoPNonce("make the DPoP proof again with the nonce in DPoP-Nonce",
                               self.new_nonce(now))
        seen = hashlib.sha256(f"{jkt}\0{claims['jti']}".encode()).digest()
        if self._seen.get(seen) is not None:
            raise InvalidDPoPProof("the DPoP proof was used before; make a new one for "
                                   "each request")
        self._seen.put(seen, True, iat + self.max_age - now + 1)

    def _verified(self, proof: str) -> tuple[dict[str, Any], _Key]:
        """(claims, public key) of a proof whose signature and form are right."""
        try:
            signed = jws.extract_compact(proof.encode("ascii"), registry=self._reader)
        except (JoseError, ValueError, TypeError):
            raise InvalidDPoPProof("the DPoP proof is not a well-formed JWT") from None
        header = signed.headers()
        if header.get("typ") != "dpop+jwt":
            raise InvalidDPoPProof("the DPoP proof's typ is not dpop+jwt")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self._registries:
            raise InvalidDPoPProof(f"the DPoP proof's alg is not one of "
                                   f"{' '.join(self.algorithms)}")
        if "crit" in header or "b64" in header:
            raise InvalidDPoPProof("the DPoP proof uses JWS extensions this server does "
                                   "not accept")
        key = _public_key(header.get("jwk"), alg)
        claims = verified_claims(signed, key, self._registries[alg], "the DPoP proof",
                                 InvalidDPoPProof)
        jti = claims.get("jti")
        if not isinstance(jti, str) or not jti or len(jti) > MAX_JTI_LENGTH:
            raise InvalidDPoPProof("the DPoP proof has no usable jti")
        return claims, key


def _registry(algorithms: list[str]) -> jws.JWSRegistry:
    """A registry for ``algorithms`` whose header limit fits a proof's embedded RSA key
    (joserfc's default, 512 bytes, does not); the whole proof is bounded before."""
    registry = jws.JWSRegistry(algorithms=algorithms, strict_check_header=False)
    registry.max_header_length = MAX_PROOF_LENGTH
    return registry


def _public_key(value: Any, alg: str) -> _Key:
    """The proof's ``jwk`` header as a public key that fits ``alg``."""
    if not isinstance(value, dict):
        raise InvalidDPoPProof("the DPoP proof has no jwk header")
    if any(member in value for member in _PRIVATE_MEMBERS):
        raise InvalidDPoPProof("the DPoP proof's jwk must be a public key")
    kind = _KEY_TYPES.get(str(value.get("kty")))
    wanted = jws.JWSRegistry.algorithms[alg].key_type
    if kind is None or value.get("kty") != wanted:
        raise InvalidDPoPProof(f"the DPoP proof's jwk is not a {wanted} key for {alg}")
    if alg in _CURVES and value.get("crv") != _CURVES[alg]:
        raise InvalidDPoPProof(f"the DPoP proof's jwk is not on the curve of {alg}")
    try:
        return kind.import_key(value)
    except (JoseError, ValueError, TypeError):
        raise InvalidDPoPProof("the DPoP proof's jwk is not a usable key") from None
