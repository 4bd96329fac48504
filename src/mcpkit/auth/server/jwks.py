"""``KeySource``: an issuer's signing keys (JWKS), fetched, cached and refreshed sparingly.

What: :meth:`KeySource.key_for` returns the public key a JWT names (its ``kid`` and
``alg``). Keys come from the configured ``jwks_uri``, or from the ``jwks_uri`` of the
issuer's metadata (RFC 8414 / OIDC discovery) when none is configured. The key set is
cached; it is fetched again when it is older than ``max_age``, or when a token names a
key it lacks -- at most once per ``refresh_interval``, however many such tokens arrive:
concurrent misses wait for the one fetch in flight instead of starting their own.

A ``jwks_uri`` read from the metadata (a URL from a fetched document, not from the
configuration) follows the client's address rule (``addresses``) with the issuer in the
place of the MCP server: a literal private, loopback or link-local address, or a
``localhost`` name, is refused unless the issuer's own host is of that class (names are
not resolved for this check). A configured ``jwks_uri`` is trusted as it is.

A key set may also be given up front (``jwks=``, a JWKS document): the keys of an issuer
that publishes none, or keys pinned by configuration. It is never fetched nor refreshed; a
token naming a key outside it is refused.

Which keys count: public signature keys only. A symmetric (``oct``) key, an encryption
key (``use: enc``) or one whose ``key_ops`` exclude ``verify`` is ignored, as is a key
joserfc cannot read; a key's own ``alg``, when it has one, must be the token's. A token
without a ``kid`` is accepted only when exactly one key fits its algorithm.

Why: an unknown ``kid`` is how a rotated key first shows up, so it must trigger a fetch,
but it is also what an attacker sends for free; the interval turns a flood of forged
key ids into one request to the issuer per interval.

Failure modes: ``InvalidToken`` when no key fits (after the refresh the rules allow);
``VerifierUnavailable`` when the keys could not be fetched (timeout, HTTP error, junk, too
large, no usable key, no metadata) and no key set is cached, or when a refresh for an
unknown key fails (the key might be new). A failed fetch is not retried for
``retry_after`` seconds; until then the same failure is raised at once. A stale key set
whose refresh fails stays in use (the failure is logged).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import anyio
from joserfc import jwk
from joserfc.errors import JoseError
from joserfc.jws import JWSRegistry

from ...protocol.errors import InvalidToken, VerifierUnavailable
from ..addresses import HostClass, classify_host, refusal
from .discovery import authorization_server_metadata
from .fetch import Fetcher

log = logging.getLogger("mcpkit.auth")


class KeySource:
    """The signing keys of one issuer. ``jwks_uri=None``: discovered from ``issuer``;
    ``jwks``: a fixed key set instead (``ValueError`` when it has no usable key, or when
    ``jwks_uri`` is given too)."""

    def __init__(self, fetcher: Fetcher, *, issuer: str, jwks_uri: str | None = None,
                 refresh_interval: float = 60.0, max_age: float = 3600.0,
                 retry_after: float = 5.0, jwks: Mapping[str, Any] | None = None) -> None:
        if refresh_interval <= 0 or max_age <= 0 or retry_after < 0:
            raise ValueError("refresh_interval and max_age must be > 0, retry_after >= 0")
        if jwks is not None and jwks_uri is not None:
            raise ValueError("give the keys (jwks) or where to fetch them (jwks_uri), "
                             "not both")
        self.fetcher = fetcher
        self.issuer = issuer
        self.jwks_uri = jwks_uri
        self.refresh_interval = refresh_interval
        self.max_age = max_age
        self.retry_after = retry_after
        self._keys: list[jwk.Key] | None = None
        self._fetched_at = 0.0
        self._failure: tuple[float, str] | None = None  # (when, message) of the last failure
        self._lock = anyio.Lock()
        self.fixed = jwks is not None
        if jwks is not None:
            self._keys = _usable_keys(jwks)
            if not self._keys:
                raise ValueError("the given JWKS has no usable signature key (public "
                                 "asymmetric keys in a 'keys' list)")

    async def key_for(self, kid: str | None, alg: str) -> jwk.Key:
        """The key that verifies a token with this ``kid`` and ``alg``. Raises
        ``InvalidToken`` or ``VerifierUnavailable`` (see the module docstring)."""
        keys = self._keys
        if self.fixed:
            assert keys is not None
            fixed = _find(keys, kid, alg)
            if fixed is None:
                raise InvalidToken("the token's signing key is not known to this server")
            return fixed
        if keys is None or time.monotonic() - self._fetched_at >= self.max_age:
            keys = await self._load()
        key = _find(keys, kid, alg)
        if key is None:
            key = _find(await self._refresh(self.refresh_interval), kid, alg)
        if key is None:
            raise InvalidToken("the token's signing key is not known to this server")
        return key

    async def _load(self) -> list[jwk.Key]:
        """The key set, fetched if it is missing or older than ``max_age``; a stale set
        is kept when the fetch fails."""
        try:
            return await self._refresh(self.max_age)
        except VerifierUnavailable as exc:
            if self._keys is None:
                raise
            log.warning("keeping the cached signing keys of %s: %s", self.issuer, exc)
            return self._keys

    async def _refresh(self, fresh_for: float) -> list[jwk.Key]:
        """The key set, fetched again unless the last fetch is younger than ``fresh_for``
        seconds. One fetch at a time: callers that waited for the lock see its result."""
        async with self._lock:
            now = time.monotonic()
            if self._keys is not None and now - self._fetched_at < fresh_for:
                return self._keys
            if self._failure is not None and now - self._failure[0] < self.retry_after:
                raise VerifierUnavailable(self._failure[1])
            try:
                keys = await self._fetch()
            except VerifierUnavailable as exc:
                self._failure = (time.monotonic(), str(exc))
                raise
            self._keys, self._fetched_at, self._failure = keys, time.monotonic(), None
            return keys

    async def _fetch(self) -> list[jwk.Key]:
        if self.jwks_uri is None:
            metadata = await authorization_server_metadata(self.fetcher, self.issuer)
            uri = metadata.get("jwks_uri")
            if not isinstance(uri, str):
                raise VerifierUnavailable(f"the metadata of {self.issuer!r} has no jwks_uri")
            _check_followed(uri, self.issuer)
            self.jwks_uri = uri
        document = await self.fetcher.get_json(self.jwks_uri, what="JWKS")
        if not isinstance(document.get("keys"), list):
            raise VerifierUnavailable(f"the JWKS at {self.jwks_uri!r} has no 'keys' list")
        keys = _usable_keys(document)
        if not keys:
            raise VerifierUnavailable(f"the JWKS at {self.jwks_uri!r} has no usable key")
        log.debug("fetched %d signing keys of %s", len(keys), self.issuer)
        return keys


def _check_followed(uri: str, issuer: str) -> None:
    """Refuse a ``jwks_uri`` from ``issuer``'s metadata on an address of a class the
    issuer is not in (see the module docstring)."""
    def host_class(url: str) -> HostClass:
        return classify_host(urlsplit(url).hostname or "") or HostClass.PUBLIC

    target = host_class(uri)
    if refusal(target, {host_class(issuer)}) is not None:
        raise VerifierUnavailable(f"the metadata of {issuer!r} names jwks_uri {uri!r}, on a "
                                  f"{target.value} address, and the issuer is not on one")


def _usable_keys(document: Mapping[str, Any]) -> list[jwk.Key]:
    """The public signature keys of a JWKS document (none when it has no ``keys`` list)."""
    entries = document.get("keys")
    if not isinstance(entries, list):
        return []
    return [key for entry in entries if (key := _signature_key(entry)) is not None]


def _signature_key(entry: Any) -> jwk.Key | None:
    """The public signature key an entry of a JWKS describes, or ``None`` to skip it."""
    if not isinstance(entry, dict) or entry.get("kty") == "oct" or entry.get("use") == "enc":
        return None
    ops = entry.get("key_ops")
    if ops is not None and (not isinstance(ops, list) or "verify" not in ops):
        return None
    try:
        return jwk.import_key(entry)
    except (JoseError, ValueError, TypeError):
        return None


def _find(keys: list[jwk.Key], kid: str | None, alg: str) -> jwk.Key | None:
    """The key named ``kid`` that may verify ``alg``; without a ``kid``, the only one."""
    key_type = JWSRegistry.algorithms[alg].key_type
    fitting = [key for key in keys
               if key.key_type == key_type and key.get("alg") in (None, alg)]
    if kid is None:
        return fitting[0] if len(fitting) == 1 else None
    return next((key for key in fitting if key.kid == kid), None)
