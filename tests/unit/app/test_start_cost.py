"""What a daemon's start does before /healthz answers, and what it leaves for later.

No timings: each test checks that a piece of work is not done at the start (a module not
imported, an SSL context not built), so that the start stays as cheap as it was made.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import ssl
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import msgspec
import pytest

from actors.app.http.routes import build_app
from actors.app.http.server import ANY_PORT, DISABLED, HEALTHZ, MAIN, KubeletHTTPServer
from actors.app.http.tls import TLSSettings, server_context, serving_pair
from actors.kubelet.messages import RuntimePod
from actors.kubelet.metrics import KubeletMetrics
from runtime.cri.types import ContainerStatus
from runtime.ids import ContainerID
from runtime.pod.model import Pod
from runtime.status.types import PodStatus
from tests.helpers import wait_for

REPO = Path(__file__).resolve().parents[3]
PACKAGES = ("actors", "runtime", "proto", "bin")

LEFT_FOR_LATER = (
    "rich",  # the timeline page's colours and the trace tools' tables
    # The tools, all of them: the timeline page (/debug/timeline's, imported by its first
    # request), the Perfetto export, the kubelet's plug-in, explain, the trace commands,
    # the client side of logs, exec, attach and port-forward.
    "actors.app.tools",
    "cryptography",  # only to make a serving pair, when none is on disk
    "runtime.kubeapi",  # cluster mode's (--kubeconfig): the API client, the Node's code
    "actors.app.cluster",
    "actors.kubelet.cluster.context",
    "actors.kubelet.cluster.node_status",
    "actors.kubelet.cluster.pod_source",
    "actors.core.trace.replay",  # replay (``trace replay``) and the kubelet's world for it
    "actors.kubelet.trace",
    "actors.app.drills",
    "yaml",  # PyYAML: the first static pod manifest or --config file that needs it
)
"""Modules (and packages, with all under them) the daemon's start does not import: the
/debug/timeline page's (imported by its first request), the certificate maker's, cluster
mode's (imported only with --kubeconfig), the exact YAML reader's (imported by the first
manifest or config file that needs it; yaml-rs loads with the manifest module, see
runtime.pod.manifest) and the other commands' of the program."""

VALUE_MODULES = (
    "runtime.cri.types",
    "actors.kubelet.messages",
    "actors.core.messages",
    "actors.kubelet.cluster.messages",
    "runtime.kuberuntime.container_gc",
    "runtime.kuberuntime.image_gc",
    "actors.kubelet.eviction",
    "runtime.eviction.signals",
    "actors.kubelet.garbage_collector",
    "runtime.kuberuntime.podstatus",
    "runtime.cri.usage",
    "actors.app.config.flags",
)
"""Modules of many value classes that the daemon imports: their classes are msgspec
Structs, built in C in microseconds, where a frozen slotted dataclass costs its class
twice and generated code exec'd (all told about half of a start's 0.45 s of CPU once)."""


class HealthyView:
    """A KubeletView that answers only what /healthz asks."""

    def __init__(self) -> None:
        self._metrics = KubeletMetrics()

    def pods(self) -> tuple[tuple[Pod, PodStatus], ...]:
        return ()

    def running_pods(self) -> tuple[RuntimePod, ...]:
        return ()

    def health(self) -> Mapping[str, str | None]:
        return {"ping": None, "syncloop": None, "pleg": None, "runtime": None}

    def metrics(self) -> KubeletMetrics:
        return self._metrics

    def refresh_metrics(self) -> None:
        pass

    def container_status(self, container_id: ContainerID) -> ContainerStatus | None:
        return None


def test_the_daemons_imports_leave_the_timeline_page_and_cryptography_out() -> None:
    code = ("import json, sys, bin.main, actors.app.daemon\n"
            f"print(json.dumps(sorted(m for m in sys.modules for later in {LEFT_FOR_LATER!r}"
            " if m == later or m.startswith(later + '.'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    assert json.loads(out.splitlines()[-1]) == []


BEFORE_THE_PAIR = (
    "grpc",  # the CRI client's
    "proto",
    "runtime.cri.client",
    "runtime.kuberuntime.manager",
    "actors.app.daemon",
    "actors.kubelet.sync_loop",
    "actors.kubelet.eviction",
    "actors.kubelet.garbage_collector",
    "actors.kubelet.pod_worker",
    "actors.kubelet.stats_collector",
)
"""What the program has not imported when a first start's serving pair begins (its child
process starts once the flags are read, and makes the pair beside the rest of the start:
the sooner, the less of it a first start waits for)."""


def test_reading_the_flags_loads_no_actor_and_no_runtime_client() -> None:
    code = ("import json, sys\n"
            "import actors.app.main as m\n"
            "m.parse_flags(['--pod-manifest-path', '/etc/kubernetes/manifests'])\n"
            f"print(json.dumps(sorted(m for m in sys.modules for early in {BEFORE_THE_PAIR!r}"
            " if m == early or m.startswith(early + '.'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    assert json.loads(out.splitlines()[-1]) == []


@pytest.mark.parametrize("module", VALUE_MODULES)
def test_the_value_classes_the_daemon_imports_are_structs(module: str) -> None:
    classes = [v for v in vars(importlib.import_module(module)).values()
               if isinstance(v, type) and v.__module__ == module
               and (dataclasses.is_dataclass(v) or issubclass(v, msgspec.Struct))]
    assert classes, module
    assert [c.__name__ for c in classes if dataclasses.is_dataclass(c)] == []


def test_the_setup_steps_bytecode_is_what_the_daemons_imports_read(tmp_path: Path) -> None:
    """scripts/setup.sh's compile step (scripts/compile_bytecode.sh) leaves a current .pyc
    for every module of ours a start imports: importing them, with bytecode writes allowed,
    compiles (writes) nothing."""
    prefix = tmp_path / "pyc"
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(prefix)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([str(REPO / "scripts" / "compile_bytecode.sh"), sys.executable], env=env,
                   check=True, timeout=300)
    checkout = prefix / REPO.relative_to(REPO.anchor)

    def cached() -> dict[Path, int]:
        return {p: p.stat().st_mtime_ns for package in PACKAGES
                for p in (checkout / package).rglob("*.pyc")}

    made = cached()
    code = ("import json, sys, bin.main, actors.app.daemon\n"
            "print(json.dumps(sorted(m for m in sys.modules"
            f" if m.split('.')[0] in {PACKAGES!r})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    imported = json.loads(out.splitlines()[-1])
    assert len(imported) > 100, imported  # the daemon's modules, from the checkout
    assert cached() == made


def test_bytecode_in_the_checkout_is_ignored_by_git() -> None:
    for path in ("actors/app/__pycache__/main.cpython-311.pyc", "bin/__pycache__/x.pyc"):
        subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", path], check=True,
                       timeout=30)


def test_the_https_listener_starts_on_the_daemons_context_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cheroot's own adapter would build two default SSL contexts (each reading the
    system's CA bundle) and shake hands with itself; the main port uses the context made
    from the flags, and answers over it."""
    tls = TLSSettings(cert_dir=str(tmp_path / "pki"), node_name="node")
    cert, key = serving_pair(tls)
    context = server_context(tls, cert, key)

    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError("the HTTP server's start built an SSL context of its own")

    server = KubeletHTTPServer(HealthyView(), port=ANY_PORT, read_only_port=DISABLED,
                               healthz_port=DISABLED, tls=(context, cert, key))
    with monkeypatch.context() as patch:
        patch.setattr(ssl, "create_default_context", refuse)
        server.start()
    try:
        client = ssl.create_default_context(cafile=cert)
        client.check_hostname = False
        url = f"https://127.0.0.1:{server.bound_ports[MAIN]}/healthz"
        with urllib.request.urlopen(url, context=client, timeout=10) as answer:
            assert (answer.status, answer.read()) == (200, b"ok")
    finally:
        server.stop()
def test_a_disabled_listener_gets_no_app(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        built.append("app")
        return build_app(*args, **kwargs)

    monkeypatch.setattr("actors.app.http.server.build_app", counted)
    server = KubeletHTTPServer(HealthyView(), port=ANY_PORT, read_only_port=DISABLED,
                               healthz_port=ANY_PORT)
    server.start()
    try:
        assert built == ["app"]  # the main port's; none for the read-only port
    finally:
        server.stop()


def test_the_healthz_port_answers_before_the_other_ports_apps_are_built(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The start serves /healthz first; the main port's app (its routes, its worker
    threads) comes after, its socket listening meanwhile."""
    release = threading.Event()

    def held(*args: Any, **kwargs: Any) -> Any:
        assert release.wait(60), "never released"
        return build_app(*args, **kwargs)

    monkeypatch.setattr("actors.app.http.server.build_app", held)
    server = KubeletHTTPServer(HealthyView(), port=ANY_PORT, read_only_port=DISABLED,
                               healthz_port=ANY_PORT)
    starting = threading.Thread(target=server.start, daemon=True)
    starting.start()
    try:
        wait_for(lambda: HEALTHZ in server.bound_ports, 60, "the healthz port served")
        url = f"http://127.0.0.1:{server.bound_ports[HEALTHZ]}/healthz"
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert (answer.status, answer.read()) == (200, b"ok")
        assert MAIN not in server.bound_ports
    finally:
        release.set()
        starting.join(60)
        server.stop()



def test_the_serving_pair_child_imports_only_the_standard_library() -> None:
    """The child that makes a first start's serving pair beside the daemon loads none of
    the daemon's libraries (msgspec, loguru): its time is the start's while it waits."""
    code = ("import json, sys, actors.app.http.self_signed\n"
            "print(json.dumps(sorted(m for m in ('msgspec', 'loguru', 'yaml', 'grpc')"
            " if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    assert json.loads(out.splitlines()[-1]) == []
