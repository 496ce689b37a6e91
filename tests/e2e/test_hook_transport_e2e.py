"""Lifecycle hooks' httpGet and tcpSocket on containerd, through the recorded HookTransport:
the daemon's preStop GET reaches the pod's server on its pod IP, a tcpSocket to a port
nothing listens on fails; the trace holds both answers, and a replay (the pod, its IP and
its network gone) gives them back without a divergence: it sends nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from actors.core.trace.reader import read_trace
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.kuberuntime.hook_transport import HOOK_TRANSPORT_TARGET
from runtime.kuberuntime.hooks import USER_AGENT
from tests.e2e.daemon import REPO, daemon_on, stopped_after
from tests.e2e.test_daemon import SERVE, manifest
from tests.helpers import listening, wait_for

pytestmark = pytest.mark.e2e

HOOKS = f"""    ports: [{{name: http, containerPort: 8080}}]
    lifecycle:
      preStop:
        httpGet: {{path: /bye, port: http, httpHeaders: [{{name: X-Drain, value: now}}]}}
  - name: side
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", {json.dumps(SERVE)}]
    lifecycle:
      preStop:
        tcpSocket: {{port: 9}}
"""
"""The main container serves /bye on 8080 (httpd in the background, so the shell's trap
ends it on SIGTERM); its side car's preStop connects to port 9, where nothing listens."""



@pytest.mark.timeout(900)
def test_http_and_tcp_pre_stop_hooks_are_recorded_and_replay_without_the_pod(
    containerd: EmbeddedContainerd, cri: CRIClient
) -> None:
    serve = "mkdir -p /www; echo bye > /www/bye; httpd -vv -p 8080 -h /www; " + SERVE
    daemon = daemon_on(containerd, "hooknet", "--trace-flush-frequency", "0.5s")
    trace_dir = daemon.workdir / "trace"
    daemon.flags = (*daemon.flags, "--trace-dir", str(trace_dir))
    (daemon.manifests / "hooks.yaml").write_text(manifest("hooks", serve, extra=HOOKS))
    name = "hooks-e2e-node"
    with stopped_after(daemon):
        daemon.start()
        pod = daemon.wait_running(name, 60.0)
        ip = str(pod["status"]["podIP"])
        wait_for(lambda: listening(ip, 8080), 30.0, "httpd to listen")
        (daemon.manifests / "hooks.yaml").unlink()
        wait_for(lambda: daemon.pod(name) is None, 60.0, "the pod to be removed")

    records = read_trace(trace_dir).records
    calls = {r["method"]: r for r in records
             if r["k"] == "call" and r.get("target") == HOOK_TRANSPORT_TARGET}
    get: dict[str, Any] = calls["http_get"]
    assert get["args"][0] == f"http://{ip}:8080/bye"
    assert get["args"][1] == [["User-Agent", USER_AGENT], ["Accept", "*/*"],
                              ["X-Drain", "now"]]
    assert get["result"] == 200
    connect: dict[str, Any] = calls["tcp_connect"]
    assert connect["args"][:2] == [ip, 9]
    assert connect["error"]["type"] == "HookTransportError"
    assert "refused" in connect["error"]["detail"]
    events = [r["body"] for r in records if r["k"] == "msg" and r.get("type") == "RecordEvent"
              and r["body"]["reason"] == "FailedPreStopHook"]
    assert [e["message"] for e in events] == ["PreStopHook failed"]
    assert events[0]["ref"]["field_path"] == "spec.containers{side}"

    # The pod's IP is gone with its network: a GET now would fail, and a replay that
    # sent one would send a FailedPreStopHook for "main" the recording did not.
    assert not listening(ip, 8080)
    replayed = subprocess.run([sys.executable, "-m", "bin.main", "trace", "replay",
                               str(trace_dir)], cwd=REPO, capture_output=True, text=True,
                              timeout=300)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no divergence: replayed" in replayed.stdout
