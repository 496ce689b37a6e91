"""Fixtures: a fresh emulated API server per test, a raw client, and kubectl for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apiserver import EmulatedAPIServer
from tests.apiserver.client import RawClient
from tests.apiserver.kubectl import Kubectl


@pytest.fixture
def server() -> Iterator[EmulatedAPIServer]:
    with EmulatedAPIServer(bookmark_interval=0.2) as srv:
        yield srv


@pytest.fixture
def client(server: EmulatedAPIServer) -> Iterator[RawClient]:
    raw = RawClient(server)
    yield raw
    raw.close()


@pytest.fixture
def kubectl(server: EmulatedAPIServer, tmp_path: Path) -> Kubectl:
    return Kubectl(server.write_kubeconfig(tmp_path / "kubeconfig"))
