"""Fixtures of the provider tests: one moto server per module, on loopback, and a cloud account."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from providers._moto import MotoServer, account_credentials, moto_server

_accounts = itertools.count(111111111111)


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    with moto_server() as srv:
        yield srv


@pytest.fixture(scope="module")
def account(moto: MotoServer) -> Iterator[dict[str, str]]:
    """One cloud account for the module (moto builds each account's backend on first use: slow)."""
    creds = account_credentials(moto.url, str(next(_accounts)))
    mp = pytest.MonkeyPatch()
    for k, v in creds.items():
        mp.setenv(k, v)
    yield creds
    mp.undo()
