"""Fixtures of the auth tests: one test authorization server for the whole package (a
real uvicorn on 127.0.0.1), its state reset before each test; and oidc-provider (a real
authorization server in Node.js, tests/support/oidc.py), started once per session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from joserfc import jwk

from tests.support.http import LiveServer
from tests.support.node import NodeUnavailable
from tests.support.oidc import OidcProvider, new_signing_key, prepare

from .idp import IdP


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def idp_server() -> Iterator[IdP]:
    idp = IdP()
    with LiveServer(idp) as live:
        idp.base = live.base
        yield idp


@pytest.fixture
def idp(idp_server: IdP) -> IdP:
    idp_server.reset()
    return idp_server


# ------------------------------------------------------------------ oidc-provider


def _unavailable(reason: str) -> None:
    """Skip locally; fail under CI (CI is set), so a CI run cannot skip these silently."""
    message = f"oidc-provider end-to-end tests need Node.js and npm: {reason}"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def oidc_runtime() -> tuple[str, Path]:
    """(node, node_modules with the pinned oidc-provider), installed once into the cache."""
    try:
        return prepare()
    except NodeUnavailable as exc:
        _unavailable(str(exc))
        raise  # not reached: skip and fail raise


@pytest.fixture(scope="session")
def oidc_keys() -> list[jwk.Key]:
    """The signing keys of the oidc-provider instances (both: see ``oidc_other``)."""
    return [new_signing_key("oidc-rs256")]


@pytest.fixture(scope="session")
def oidc_machine_key() -> jwk.ECKey:
    """The private key of oidc-provider's ``machine`` client (private_key_jwt)."""
    return jwk.ECKey.generate_key("P-256", {"kid": "machine-1", "alg": "ES256"},
                                  private=True)


@pytest.fixture(scope="session")
def oidc(oidc_runtime: tuple[str, Path], oidc_keys: list[jwk.Key],
         oidc_machine_key: jwk.ECKey) -> Iterator[OidcProvider]:
    """A running oidc-provider (tests/auth/oidc/server.mjs) for the whole session."""
    with OidcProvider(*oidc_runtime, oidc_keys, [oidc_machine_key]) as provider:
        yield provider


@pytest.fixture(scope="session")
def oidc_other(oidc_runtime: tuple[str, Path],
               oidc_keys: list[jwk.Key]) -> Iterator[OidcProvider]:
    """A second instance: another issuer (its port) signing with the *same* keys, so its
    tokens differ from ``oidc``'s only in ``iss``."""
    with OidcProvider(*oidc_runtime, oidc_keys) as provider:
        yield provider
