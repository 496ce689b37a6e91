"""Container logs end to end on a real containerd: /containerLogs with every option
against a busybox writing known lines to stdout and stderr, a line longer than
containerd's 16 KiB record (P records) and a last line without a newline (a P record at
exit), a restarted container for ``previous``, a follow that ends when its container
ends; ``kubelet-actors logs`` against the daemon over HTTP, over HTTPS with a client
certificate and with a token (cluster mode on the emulated API server), and 404s."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.app.http.server import MAIN, READ_ONLY, WORKER_THREADS
from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.auth import Rules
from tests.e2e.daemon import NODE, REPO, Daemon, client_pair, daemon_on, joining, stopped_after
from tests.e2e.streams import counts
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

POD = f"logs-{NODE}"
LONG = 20000  # over containerd's max_container_log_line_size (16 KiB): P records

# First run: known lines, a long line, a last line without newline, exit 1 (OnFailure
# restarts it); second run: one line each, then runs until stopped.
TALK = f"""n=$(cat /ctl/n-talk 2>/dev/null || echo 0); n=$((n+1)); echo $n > /ctl/n-talk
echo run-$n; echo err-$n >&2
# (The pause puts err-1 in the file before the rest: the runtime copies each stream on
# its own, so their order in the file is otherwise its choice.)
if [ $n -eq 1 ]; then sleep 1; head -c {LONG} /dev/zero | tr '\\0' a; echo; printf tail
  exit 1; fi
trap 'exit 0' TERM; while true; do sleep 1; done"""
# Waits for the test's go, writes 2000 lines and ends (exit 0: not restarted).
FINITE = """echo started; while [ ! -f /ctl/go ]; do sleep 0.1; done
i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done; echo last"""


def scripted_pod(name: str, ctl: Path, scripts: dict[str, str],
                 restart_policy: str = "") -> str:
    """A pod manifest of busybox containers, each (by name) running its ``sh`` script with
    ``ctl`` (a host directory: the test's way to talk to it) at /ctl; a 2 s grace."""
    policy = f"\n  restartPolicy: {restart_policy}" if restart_policy else ""
    containers = "".join(f"""
  - name: {container}
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", {json.dumps(script)}]
    volumeMounts: [{{name: ctl, mountPath: /ctl}}]""" for container, script in scripts.items())
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:{policy}
  terminationGracePeriodSeconds: 2
  volumes:
  - name: ctl
    hostPath: {{path: {ctl}, type: DirectoryOrCreate}}
  containers:{containers}
"""


def _logs_daemon(containerd: EmbeddedContainerd) -> Daemon:
    daemon = daemon_on(containerd, "logs")
    (daemon.manifests / "logs.yaml").write_text(scripted_pod(
        "logs", daemon.workdir / "ctl", {"talk": TALK, "finite": FINITE}, "OnFailure"))
    return daemon


def _restarted(daemon: Daemon) -> bool:
    pod = daemon.pod(POD)
    if pod is None:
        return False
    statuses = {s["name"]: s for s in pod["status"].get("containerStatuses", ())}
    talk = statuses.get("talk", {})
    return talk.get("restartCount") == 1 and "running" in talk.get("state", {}) and (
        "running" in statuses.get("finite", {}).get("state", {}))


@pytest.fixture
def daemon(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Daemon]:
    with stopped_after(_logs_daemon(containerd)) as d:
        d.start()
        wait_for(lambda: _restarted(d), 60.0, "talk restarted once, finite running")
        yield d


def logs(daemon: Daemon, container: str, **query: str) -> tuple[int, str]:
    path = f"/containerLogs/default/{POD}/{container}"
    return daemon.get(path + ("?" + urllib.parse.urlencode(query) if query else ""))


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bin.main", "logs", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_every_option_against_a_real_container(daemon: Daemon) -> None:
    first_out = "run-1\n" + "a" * LONG + "\ntail"
    # previous: the first run; its long line came as P records, joined; its last
    # write had no newline (a P record at exit): none is added.
    assert logs(daemon, "talk", previous="true", stream="Stdout") == (200, first_out)
    assert logs(daemon, "talk", previous="true", stream="Stderr") == (200, "err-1\n")
    code, both = logs(daemon, "talk", previous="1")
    assert code == 200
    assert sorted(both.split("\n")) == sorted([*first_out.split("\n"), "err-1"])
    # tailLines counts lines as written: the long line (two records) is one. (Where
    # err-1 lands among the stdout lines is the runtime's choice: compare with `both`.)
    lines = both.split("\n")
    for n in range(1, 5):
        assert logs(daemon, "talk", previous="true", tailLines=str(n)) == (
            200, "\n".join(lines[-n:]))
    assert logs(daemon, "talk", previous="true", tailLines="0") == (200, "")
    assert logs(daemon, "talk", previous="true", limitBytes="8", stream="Stdout") == (
        200, "run-1\naa")
    # The current run.
    assert logs(daemon, "talk", stream="Stdout") == (200, "run-2\n")
    code, stamped = logs(daemon, "talk", stream="Stdout", timestamps="true")
    assert code == 200 and re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}(Z|[+-]\d\d:\d\d) run-2\n", stamped), stamped
    assert logs(daemon, "talk", stream="Stdout", sinceSeconds="3600") == (200, "run-2\n")
    assert logs(daemon, "talk", sinceTime="2100-01-01T00:00:00Z") == (200, "")
    # Bad input, in upstream's words.
    code, body = logs(daemon, "talk", tailLines="-1")
    assert (code, json.loads(body)["message"]) == (
        422, f'PodLogOptions "{POD}" is invalid: tailLines: Invalid value: -1: '
             "must be greater than or equal to 0")
    code, body = logs(daemon, "talk", sinceSeconds="5", sinceTime="2024-01-01T00:00:00Z")
    assert code == 422 and "at most one of `sinceTime` or `sinceSeconds`" in body
    code, body = logs(daemon, "finite", previous="true")
    assert (code, json.loads(body)["message"]) == (
        400, f'previous terminated container "finite" in pod "{POD}" not found')
    code, body = daemon.get("/containerLogs/default/nosuch/talk")
    assert (code, json.loads(body)["message"]) == (404, 'pod "nosuch" does not exist')
    code, body = daemon.get(f"/containerLogs/default/{POD}/nosuch")
    assert (code, json.loads(body)["message"]) == (
        404, f'container "nosuch" not found in pod "{POD}"')


def test_follow_ends_when_the_container_ends(daemon: Daemon) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", daemon.read_only_port, timeout=30)
    try:
        conn.request("GET", f"/containerLogs/default/{POD}/finite?follow=true")
        resp = conn.getresponse()
        assert resp.status == 200
        assert resp.read1(65536) == b"started\n"
        (daemon.workdir / "ctl" / "go").touch()
        rest = resp.read()  # returns once the container ended and the stream with it
    finally:
        conn.close()
    expected = "".join(f"line-{i}\n" for i in range(2000)) + "last\n"
    assert rest.decode() == expected


def _quiet_follow(port: int, tls: bool) -> socket.socket:
    """A follow of ``talk`` (running, writing nothing more) on ``port``, read until its
    log so far has come: a worker thread of that port serves it from then on."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    if tls:
        sock = ssl._create_unverified_context().wrap_socket(sock)
    sock.sendall(f"GET /containerLogs/default/{POD}/talk?follow=true HTTP/1.1\r\n"
                 "Host: node\r\n\r\n".encode())
    received = b""
    while b"run-2" not in received or b"err-2" not in received:
        chunk = sock.recv(65536)  # times out (fails) when no worker serves it
        assert chunk, f"the follow ended early: {received!r}"
        received += chunk
    return sock


def test_a_follow_whose_client_hangs_up_gives_its_thread_back(daemon: Daemon) -> None:
    """On the read-only port (plain HTTP) and the main port (HTTPS): as many quiet
    follows as the port has worker threads, each client gone mid-stream, the log files
    closed; then as many again, served only if the first ones' threads came back."""
    assert daemon.proc is not None
    pid = daemon.proc.pid
    ports = ((daemon.read_only_port, False, WORKER_THREADS[READ_ONLY]),
             (daemon.port, True, WORKER_THREADS[MAIN]))
    _threads, fds = counts(pid)
    for _round in range(2):
        held = [_quiet_follow(port, tls) for port, tls, workers in ports
                for _ in range(workers)]
        assert counts(pid)[1] > fds  # each follow holds its log file open
        for sock in held:
            sock.close()
        wait_for(lambda: counts(pid)[1] <= fds, 30,
                 f"the daemon back to {fds} descriptors (the follows' files closed)")


def test_cli_over_http(daemon: Daemon) -> None:
    server = ("--server", f"http://127.0.0.1:{daemon.read_only_port}")
    done = cli(POD, *server)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"error: a container name must be specified for pod {POD}, choose one of: "
        "[talk finite]")
    done = cli(POD, "-c", "talk", "--previous", "--tail", "1", *server)
    assert (done.returncode, done.stdout) == (0, "tail")
    done = cli(POD, "-n", "default", "-c", "talk", "--since", "1h", "--limit-bytes", "3",
               *server)
    assert done.returncode == 0 and done.stdout in ("run", "err")
    done = cli(POD, "-c", "talk", "--timestamps", "--since-time", "2100-01-01T00:00:00Z",
               *server)
    assert (done.returncode, done.stdout) == (0, "")
    done = cli("nosuch", *server)
    assert (done.returncode, done.stderr.strip()) == (
        1, 'Error from server (NotFound): pods "nosuch" not found')
    done = cli(POD, "-c", "nosuch", *server)
    assert done.returncode == 1 and "container nosuch is not valid" in done.stderr
    # The main port: HTTPS with the daemon's self-signed certificate.
    done = cli(POD, "-c", "talk", "--tail", "1", "--server",
               f"https://127.0.0.1:{daemon.port}", "--insecure-skip-tls-verify")
    assert done.returncode == 0 and done.stdout in ("run-2\n", "err-2\n")
    done = cli(POD, "--server", "http://127.0.0.1:1")
    assert done.returncode == 1 and "cannot reach the kubelet" in done.stderr


def test_cli_over_https_with_a_certificate_and_a_token_emulated_apiserver(
        containerd: EmbeddedContainerd, cri: CRIClient) -> None:
    rules = (Rules().allow("log-reader", verbs=("get",), subresources=("proxy",), name=NODE)
             .allow("token-reader", verbs=("get",), subresources=("proxy",), name=NODE))
    with EmulatedAPIServer(sar_policy=rules) as server:
        daemon = _logs_daemon(containerd)
        joined = joining(server, daemon.workdir)
        daemon.flags += joined.flags
        reader = client_pair(server, daemon.workdir, "log-reader")
        server.add_token("secret-token", "token-reader")
        with stopped_after(daemon):
            daemon.start()
            wait_for(lambda: _restarted(daemon), 60.0, "talk restarted once")
            https = ("--server", f"https://127.0.0.1:{daemon.port}",
                     "--certificate-authority", str(joined.ca))
            done = cli(POD, "-c", "talk", "--previous", "--tail", "1", *https, *reader)
            assert (done.returncode, done.stdout, done.stderr) == (0, "tail", "")
            done = cli(POD, "-c", "talk", "--previous", "--tail", "1", *https,
                       "--token", "secret-token")
            assert (done.returncode, done.stdout, done.stderr) == (0, "tail", "")
            done = cli(POD, "-c", "talk", *https, "--token", "forged")
            assert (done.returncode, done.stderr.strip()) == (
                1, "Error from server (Unauthorized): Unauthorized")
            done = cli(POD, "-c", "talk", *https)  # anonymous is off in cluster mode
            assert done.returncode == 1 and "Unauthorized" in done.stderr
