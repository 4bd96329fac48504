"""Where an OAuth client keeps its tokens and client registrations.

What: :class:`Tokens` (an access token, its expiry, refresh token and scopes) and
:class:`ClientCredentials` (a ``client_id``, optional secret and the token endpoint auth
method) are kept by a :class:`TokenStore`: tokens under (issuer, resource), credentials
under the issuer. :class:`MemoryTokenStore` keeps them for the life of the process;
:class:`FileTokenStore` in one JSON file created with mode 0600 and replaced atomically.

Why: MCP asks clients to store tokens securely (OAuth 2.1 §7.1), never to send a token
from one authorization server to a resource that now trusts another, and to keep
dynamically registered credentials per authorization server (2026-07-28: keyed by the
issuer, re-registered when the resource moves to another one).

Failure modes: :class:`FileTokenStore` raises ``OSError`` when the file cannot be
written; a file that is not a JSON object of the expected shape is treated as empty
(its entries are unusable; the next save replaces it) rather than raising. A file whose
permissions let others read it is refused with ``PermissionError`` on load.
"""

from __future__ import annotations

import os
import stat
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson

if TYPE_CHECKING:
    from .jwt import PrivateKeyJWT


@dataclass(frozen=True)
class Tokens:
    """What a token endpoint answered. ``expires_at``: seconds since the epoch, or
    ``None`` when the server did not say. ``token_type``: ``Bearer``, or ``DPoP`` for a
    token bound to the private key ``dpop_jwk`` (a JWK, kept with the token so that a
    stored token stays usable; RFC 9449)."""

    access_token: str
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = None
    scopes: tuple[str, ...] = ()
    dpop_jwk: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def dpop_bound(self) -> bool:
        """Whether the token must be presented with DPoP proofs."""
        return self.token_type.lower() == "dpop"

    def __repr__(self) -> str:  # never show the secrets
        return f"Tokens(token_type={self.token_type!r}, scopes={self.scopes!r})"

    def expired(self, leeway: float = 30.0) -> bool:
        """Whether the access token is (about to be) expired."""
        return self.expires_at is not None and time.time() + leeway >= self.expires_at


@dataclass(frozen=True)
class ClientCredentials:
    """A client's registration at one authorization server. ``auth_method``: the token
    endpoint client authentication (``none``, ``client_secret_basic``,
    ``client_secret_post``, ``private_key_jwt``); ``None`` picks one: ``private_key_jwt``
    with a ``private_key``, else one from the server's metadata. ``private_key`` is
    never written to a store."""

    client_id: str
    client_secret: str | None = None
    auth_method: str | None = None
    redirect_uris: tuple[str, ...] = field(default=())
    private_key: PrivateKeyJWT | None = field(default=None, compare=False)

    def __repr__(self) -> str:
        return f"ClientCredentials(client_id={self.client_id!r})"


class TokenStore(Protocol):
    """Storage of tokens (per issuer and resource) and client credentials (per issuer).
    Methods are synchronous and quick (they run inside an httpx auth flow)."""

    def get_tokens(self, issuer: str, resource: str) -> Tokens | None: ...
    def set_tokens(self, issuer: str, resource: str, tokens: Tokens | None) -> None: ...
    def get_client(self, issuer: str) -> ClientCredentials | None: ...
    def set_client(self, issuer: str, client: ClientCredentials | None) -> None: ...


class MemoryTokenStore:
    """A :class:`TokenStore` in a dict, for the life of the process."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], Tokens] = {}
        self._clients: dict[str, ClientCredentials] = {}
        self._lock = threading.Lock()

    def get_tokens(self, issuer: str, resource: str) -> Tokens | None:
        return self._tokens.get((issuer, resource))

    def set_tokens(self, issuer: str, resource: str, tokens: Tokens | None) -> None:
        with self._lock:
            if tokens is None:
                self._tokens.pop((issuer, resource), None)
            else:
                self._tokens[(issuer, resource)] = tokens

    def get_client(self, issuer: str) -> ClientCredentials | None:
        return self._clients.get(issuer)

    def all_tokens(self) -> list[tuple[str, str, Tokens]]:
        """Every (issuer, resource, tokens) kept (``set_tokens(..., None)`` removes one)."""
        with self._lock:
            return [(issuer, resource, tokens)
                    for (issuer, resource), tokens in self._tokens.items()]

    def set_client(self, issuer: str, client: ClientCredentials | None) -> None:
        with self._lock:
            if client is None:
                self._clients.pop(issuer, None)
            else:
                self._clients[issuer] = client


def _tokens(raw: Any) -> Tokens | None:
    try:
        return Tokens(access_token=str(raw["access_token"]),
                      token_type=str(raw.get("token_type") or "Bearer"),
                      expires_at=None if raw.get("expires_at") is None
                      else float(raw["expires_at"]),
                      refresh_token=None if raw.get("refresh_token") is None
                      else str(raw["refresh_token"]),
                      scopes=tuple(str(s) for s in raw.get("scopes") or ()),
                      dpop_jwk=raw["dpop_jwk"] if isinstance(raw.get("dpop_jwk"), dict)
                      else None)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _client(raw: Any) -> ClientCredentials | None:
    try:
        return ClientCredentials(client_id=str(raw["client_id"]),
                                 client_secret=raw.get("client_secret"),
                                 auth_method=raw.get("auth_method"),
                                 redirect_uris=tuple(raw.get("redirect_uris") or ()))
    except (KeyError, TypeError, AttributeError):
        return None


class FileTokenStore:
    """A :class:`TokenStore` in one JSON file (mode 0600, its directory made 0700 when
    created here; it holds secrets: tokens, client secrets, DPoP private keys). Every
    change rewrites the file through a temporary file in the same directory and an
    atomic rename, so a crash leaves the old or the new content."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def _load(self) -> dict[str, Any]:
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return {"tokens": {}, "clients": {}}
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise PermissionError(f"{self.path} is readable by others; chmod 600 it")
        try:
            data = orjson.loads(self.path.read_bytes())
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict):
            data = {}
        for key in ("tokens", "clients"):
            if not isinstance(data.get(key), dict):
                data[key] = {}
        return data

    def _save(self, data: dict[str, Any]) -> None:
        directory = self.path.parent
        if not directory.exists():
            directory.mkdir(mode=0o700, parents=True)
        fd, tmp = tempfile.mkstemp(prefix=".tokens.", dir=directory)  # created 0600
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(orjson.dumps(data, option=orjson.OPT_INDENT_2))
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @staticmethod
    def _key(issuer: str, resource: str) -> str:
        return f"{issuer} {resource}"  # neither may contain a space (both are URLs)

    def get_tokens(self, issuer: str, resource: str) -> Tokens | None:
        with self._lock:
            return _tokens(self._load()["tokens"].get(self._key(issuer, resource)))

    def set_tokens(self, issuer: str, resource: str, tokens: Tokens | None) -> None:
        with self._lock:
            data = self._load()
            if tokens is None:
                data["tokens"].pop(self._key(issuer, resource), None)
            else:
                entry = asdict(tokens)
                entry["scopes"] = list(tokens.scopes)
                data["tokens"][self._key(issuer, resource)] = entry
            self._save(data)

    def get_client(self, issuer: str) -> ClientCredentials | None:
        with self._lock:
            return _client(self._load()["clients"].get(issuer))

    def all_tokens(self) -> list[tuple[str, str, Tokens]]:
        """Every usable (issuer, resource, tokens) in the file (``set_tokens(..., None)``
        removes one)."""
        with self._lock:
            found: list[tuple[str, str, Tokens]] = []
            for key, raw in self._load()["tokens"].items():
                issuer, sep, resource = str(key).partition(" ")
                tokens = _tokens(raw)
                if sep and tokens is not None:
                    found.append((issuer, resource, tokens))
            return found

    def set_client(self, issuer: str, client: ClientCredentials | None) -> None:
        with self._lock:
            data = self._load()
            if client is None:
                data["clients"].pop(issuer, None)
            else:
                entry = {"client_id": client.client_id,
                         "client_secret": client.client_secret,
                         "auth_method": client.auth_method,
                         "redirect_uris": list(client.redirect_uris)}
                data["clients"][issuer] = entry
            self._save(data)
