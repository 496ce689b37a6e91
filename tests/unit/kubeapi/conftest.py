"""Fixtures: a fresh emulated API server per test, and the kubelet's client on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.kubeapi.client import KubeClient
from runtime.kubeapi.kubeconfig import load_kubeconfig
from runtime.kubeapi.transport import Transport
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.kubectl import Kubectl


@pytest.fixture
def server() -> Iterator[EmulatedAPIServer]:
    with EmulatedAPIServer(bookmark_interval=0.2) as srv:
        yield srv


@pytest.fixture
def client(server: EmulatedAPIServer, tmp_path: Path) -> Iterator[KubeClient]:
    config = load_kubeconfig(server.write_kubeconfig(tmp_path / "kubelet.kubeconfig",
                                                     "system:node:n1", groups=("system:nodes",)))
    transport = Transport(config)
    yield KubeClient(transport)
    transport.close()


@pytest.fixture
def kubectl(server: EmulatedAPIServer, tmp_path: Path) -> Kubectl:
    return Kubectl(server.write_kubeconfig(tmp_path / "admin.kubeconfig"))

