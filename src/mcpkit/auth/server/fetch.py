"""``Fetcher``: the verifiers' only way onto the network, bounded in every direction.

What: one JSON document per call (GET for metadata and key sets, a form POST for
introspection) through one ``httpx.AsyncClient``: the URL must be ``https`` (``http``
only on a loopback host unless ``allow_http``), the whole exchange has a deadline
(``timeout``, redirects included: a server that drips one byte a second cannot hold a
request open), the body is read up to ``max_bytes`` and no further, and a redirect is
followed only within the origin that was asked (at most ``max_redirects``; a POST only
through 307/308, which keep the method and body).

Why: a verifier sits on every request's path. A JWKS endpoint that hangs, answers junk
or sends a gigabyte must turn into a prompt, typed error, never a hung request or a
process out of memory; a redirect to another origin must not carry an introspection
request (with its client credentials and token) somewhere else.

Failure modes: every failure raises :class:`~mcpkit.protocol.errors.VerifierUnavailable`
whose message names the document and the URL asked for and what went wrong (HTTP status,
timeout, size, not a JSON object); request bodies (which may hold a token) never appear
in it. An HTTP 400 or 401 whose body is an OAuth error (RFC 6749 §5.2: a JSON object with
an ``error`` code) raises its subclass :class:`ErrorAnswer`, which carries the code, so a
caller can tell an answer about the request (``unsupported_token_type``) from a failure.
A URL that breaks the scheme rule raises ``VerifierUnavailable`` too, before any
connection is made.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx
import orjson

from ...protocol.errors import VerifierUnavailable
from ..urls import is_loopback_host, origin_of

DEFAULT_TIMEOUT = 5.0
DEFAULT_MAX_BYTES = 1 << 20  # 1 MiB: far above any real key set or metadata document
_ERROR_CODE = re.compile(r"[a-z0-9_.:-]{1,64}")  # an OAuth error code, safe to log


class ErrorAnswer(VerifierUnavailable):
    """An HTTP 400 or 401 with an OAuth error body: ``status`` and ``error`` (its code)."""

    def __init__(self, message: str, status: int, error: str) -> None:
        super().__init__(message)
        self.status = status
        self.error = error


class Fetcher:
    """Bounded JSON fetches. ``client``: an ``httpx.AsyncClient`` to use (the caller owns
    and closes it); by default one is created on first use and closed by :meth:`aclose`."""

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT,
                 max_bytes: int = DEFAULT_MAX_BYTES, max_redirects: int = 3,
                 allow_http: bool = False, client: httpx.AsyncClient | None = None) -> None:
        if timeout <= 0 or max_bytes <= 0 or max_redirects < 0:
            raise ValueError("timeout and max_bytes must be > 0, max_redirects >= 0")
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.allow_http = allow_http
        self._client = client
        self._owns_client = client is None

    async def aclose(self) -> None:
        """Close the HTTP client this fetcher created (not one it was given)."""
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    def check_url(self, url: str, what: str) -> None:
        """Raise ``VerifierUnavailable`` unless ``url`` may be fetched: absolute, ``https``
        (or ``http`` on loopback, or anywhere with ``allow_http``)."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            raise VerifierUnavailable(f"{what}: {url!r} is not an absolute http(s) URL")
        if scheme == "http" and not (self.allow_http or is_loopback_host(parts.hostname)):
            raise VerifierUnavailable(f"{what}: {url!r} must use https")

    async def get_json(self, url: str, *, what: str) -> dict[str, Any]:
        """GET ``url`` and return its JSON object. ``what`` names the document in errors.
        Raises ``VerifierUnavailable`` (see the module docstring)."""
        return await self._exchange("GET", url, what, None, {})

    async def post_form(self, url: str, form: Mapping[str, str], *, what: str,
                        headers: Mapping[str, str] | None = None) -> dict[str, Any]:
        """POST ``form`` (``application/x-www-form-urlencoded``) to ``url`` and return
        the JSON object answered. Raises ``VerifierUnavailable``."""
        return await self._exchange("POST", url, what, dict(form), dict(headers or {}))

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(follow_redirects=False)
        return self._client

    async def _exchange(self, method: str, url: str, what: str, form: dict[str, str] | None,
                        headers: dict[str, str]) -> dict[str, Any]:
        self.check_url(url, what)
        headers.setdefault("accept", "application/json")
        try:
            with anyio.fail_after(self.timeout):
                body = await self._follow(method, url, what, form, headers)
        except TimeoutError:
            raise VerifierUnavailable(
                f"{what} at {url!r} did not answer within {self.timeout} s") from None
        except httpx.HTTPError as exc:
            raise VerifierUnavailable(
                f"{what} at {url!r} could not be fetched: {type(exc).__name__}") from None
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise VerifierUnavailable(f"{what} at {url!r} is not JSON") from None
        if not isinstance(document, dict):
            raise VerifierUnavailable(f"{what} at {url!r} is not a JSON object")
        return document

    async def _follow(self, method: str, url: str, what: str, form: dict[str, str] | None,
                      headers: dict[str, str]) -> bytes:
        """The body of the final answer, redirects followed within the origin."""
        timeout = httpx.Timeout(self.timeout)
        for _ in range(self.max_redirects + 1):
            request = self._http().build_request(method, url, data=form, headers=headers,
                                                 timeout=timeout)
            response = await self._http().send(request, stream=True)
            try:
                if not response.is_redirect:
                    if response.status_code != 200:
                        await self._refuse(response, url, what)
                    return await self._read(response, url, what)
                url = self._redirect_target(method, url, response, what)
            finally:
                await response.aclose()
        raise VerifierUnavailable(f"{what}: more than {self.max_redirects} redirects")

    async def _refuse(self, response: httpx.Response, url: str, what: str) -> None:
        """Raise for a non-200 answer: ``ErrorAnswer`` for an OAuth error body on a 400
        or 401, ``VerifierUnavailable`` otherwise."""
        status = response.status_code
        message = f"{what} at {url!r} answered HTTP {status}"
        if status in (400, 401):
            try:
                body = orjson.loads(await self._read(response, url, what))
            except (VerifierUnavailable, orjson.JSONDecodeError):
                body = None
            error = body.get("error") if isinstance(body, dict) else None
            if isinstance(error, str) and _ERROR_CODE.fullmatch(error):
                raise ErrorAnswer(f"{message} ({error})", status, error)
        raise VerifierUnavailable(message)

    def _redirect_target(self, method: str, url: str, response: httpx.Response,
                         what: str) -> str:
        location: str | None = response.headers.get("location")
        if not location:
            raise VerifierUnavailable(f"{what} at {url!r}: a redirect without a Location")
        target = urljoin(url, location)
        try:
            same = origin_of(target) == origin_of(url)
        except ValueError:
            same = False
        if not same:
            raise VerifierUnavailable(
                f"{what} at {url!r} redirected to another origin; not followed")
        if method != "GET" and response.status_code not in (307, 308):
            raise VerifierUnavailable(
                f"{what} at {url!r} answered a POST with HTTP {response.status_code}")
        return target

    async def _read(self, response: httpx.Response, url: str, what: str) -> bytes:
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_bytes:
            raise VerifierUnavailable(f"{what} at {url!r} is over {self.max_bytes} bytes")
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > self.max_bytes:
                raise VerifierUnavailable(f"{what} at {url!r} is over {self.max_bytes} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
