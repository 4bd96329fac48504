"""Fixtures of the auth tests: one test authorization server for the whole package (a
real uvicorn on 127.0.0.1), its state reset before each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.http import LiveServer

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
