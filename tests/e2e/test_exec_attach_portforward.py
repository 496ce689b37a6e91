"""exec, attach and port-forward end to end: the daemon on a real containerd, driven by
``kubelet-actors exec|attach|port-forward`` and by raw upgrade requests.

One daemon and one pod serve the module: ``main`` runs busybox httpd on 8080 and idles,
``reader`` has stdin open and echoes each line it reads.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import termios
import urllib.request
from collections.abc import Iterator

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import SandboxFilter
from runtime.kuberuntime import labels as L
from tests.e2e.daemon import REPO, Daemon, daemon_on, remove_every_pod, stopped_after
from tests.e2e.streams import (
    cli,
    client_frame,
    counts,
    env,
    on_terminal,
    read_until,
    read_until_socket,
    refusal,
    run_cli,
    server_flags,
    status_of,
    upgrade,
)
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

POD = "shell-e2e-node"
MAIN = ("trap 'exit 0' TERM; mkdir -p /www; echo hello-forward > /www/index.html; "
        "httpd -p 8080 -h /www; while true; do sleep 1; done")
READER = 'while read line; do echo "got $line"; done'
MANIFEST = f"""apiVersion: v1
kind: Pod
metadata:
  name: shell
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: {BUSYBOX_IMAGE}
    command: ["sh", "-c", {json.dumps(MAIN)}]
  - name: reader
    image: {BUSYBOX_IMAGE}
    stdin: true
    command: ["sh", "-c", {json.dumps(READER)}]
"""


@pytest.fixture(scope="module")
def daemon(containerd: EmbeddedContainerd) -> Iterator[Daemon]:
    d = daemon_on(containerd, "streams")
    (d.manifests / "shell.yaml").write_text(MANIFEST)
    uid = ""
    try:
        with stopped_after(d):
            try:
                d.start()
                uid = d.wait_running(POD, 60)["metadata"]["uid"]
                yield d
            finally:
                with contextlib.suppress(AssertionError, OSError):
                    remove_every_pod(d, 30.0)
    finally:
        with CRIClient(containerd.endpoint, timeout=60) as cri:
            for sandbox in cri.list_pod_sandbox(SandboxFilter(label_selector={L.POD_UID: uid})):
                cri.stop_pod_sandbox(sandbox.id)
                cri.remove_pod_sandbox(sandbox.id)


def flags(d: Daemon) -> list[str]:
    return server_flags(d.port)


def test_exec_passes_stdout_stderr_and_the_exit_code(daemon: Daemon) -> None:
    done = run_cli("exec", POD, "-c", "main", *flags(daemon), "--",
                   "sh", "-c", "echo out; echo err >&2; exit 3")
    assert done.returncode == 3, done
    assert done.stdout == b"out\n"
    assert done.stderr.decode().splitlines() == ["err", "command terminated with exit code 3"]
    ok = run_cli("exec", POD, "-c", "main", *flags(daemon), "--", "cat", "/www/index.html")
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, b"hello-forward\n", b"")


def test_exec_defaults_the_container_and_passes_stdin(daemon: Daemon) -> None:
    done = run_cli("exec", POD, "-i", *flags(daemon), "--",
                   "sh", "-c", 'read line; echo "got $line"', stdin=b"hello\n")
    assert done.returncode == 0, done
    assert done.stdout == b"got hello\n"
    assert done.stderr.decode() == 'Defaulted container "main" out of: main, reader\n'


def test_exec_with_a_tty_follows_the_terminal_size(daemon: Daemon) -> None:
    # Each line asks the size (the first answers may come before the first resize lands).
    script = 'while read x; do [ "$x" = q ] && exit 7; stty size; done'
    with on_terminal(cli("exec", POD, "-c", "main", "-i", "-t", *flags(daemon), "--",
                         "sh", "-c", script), (30, 100), cwd=REPO, env=env()) as (proc, master):

        def size_is(size: bytes) -> bool:
            os.write(master, b"\n")
            return size in read_until(master, b"\n", 10, "a size")

        wait_for(lambda: size_is(b"30 100"), 30, "the size at the start")
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        proc.send_signal(signal.SIGWINCH)
        wait_for(lambda: size_is(b"40 120"), 30, "the size after SIGWINCH")
        os.write(master, b"q\n")
        assert proc.wait(timeout=30) == 7


def test_attach_to_a_container_reading_stdin(daemon: Daemon) -> None:
    proc = subprocess.Popen(cli("attach", POD, "-c", "reader", "-i", *flags(daemon)),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=REPO, env=env())
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b"ping\n")
        proc.stdin.flush()
        read_until(proc.stdout.fileno(), b"got ping\n", 30, "the reader's answer")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_port_forward_to_httpd_in_the_pod(daemon: Daemon) -> None:
    proc = subprocess.Popen(cli("port-forward", POD, ":8080", *flags(daemon)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                            env=env())
    assert proc.stdout is not None
    try:
        line = read_until(proc.stdout.fileno(), b" -> 8080\n", 30, "the forwarding line")
        local = int(line.split(b"127.0.0.1:")[1].split(b" ")[0])
        for _ in range(2):  # each connection has its own stream
            with urllib.request.urlopen(f"http://127.0.0.1:{local}/index.html",
                                        timeout=30) as answer:
                assert answer.read() == b"hello-forward\n"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(("path", "code", "message"), [
    ("/exec/default/nope/main?command=true&output=1", 404, "pod does not exist"),
    (f"/exec/default/{POD}/nope?command=true&output=1", 404, 'container not found ("nope")'),
    (f"/attach/default/{POD}/nope?output=1", 404, f"container nope not found in pod {POD}_default"),
    ("/portForward/default/nope?port=80", 404, "pod does not exist"),
    (f"/portForward/default/{POD}/not-its-uid?port=80", 404, "pod not found"),
    (f"/exec/default/{POD}/main?command=true", 400,
     "you must specify at least 1 of stdin, stdout, stderr"),
    (f"/portForward/default/{POD}", 400, 'query parameter "port" is required'),
    (f"/portForward/default/{POD}?port=http", 400,
     'unable to parse "http" as a port: strconv.ParseUint: parsing "http": invalid syntax'),
])
def test_bad_streams_are_refused_as_upstream_refuses_them(daemon: Daemon, path: str, code: int,
                                                          message: str) -> None:
    assert refusal(*upgrade(daemon.port, path)) == (code, message)


def test_the_cli_shows_the_refusal(daemon: Daemon) -> None:
    done = run_cli("exec", "nope", "-c", "main", *flags(daemon), "--", "true")
    assert done.returncode == 1
    assert done.stderr == b"error: unable to upgrade connection: pod does not exist\n"


def test_plain_http_to_the_https_port_is_told_to_use_https(daemon: Daemon) -> None:
    """The main port answers plain HTTP as upstream's Go server does (a bare 400, not a
    reset), and each command given ``http://`` for it names the https URL to use."""
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as sock:
        sock.sendall(b"GET /pods HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    assert received == (b"HTTP/1.0 400 Bad Request\r\n\r\n"
                        b"Client sent an HTTP request to an HTTPS server.\n")
    url = f"http://127.0.0.1:{daemon.port}"
    said = (f"error: {url} is an HTTPS port: the server answers a TLS handshake there. "
            f"Use --server https://127.0.0.1:{daemon.port}\n").encode()
    for args in (("logs", POD, "-c", "main"), ("exec", POD, "-c", "main", "--", "true"),
                 ("attach", POD, "-c", "reader")):
        done = run_cli(*args[:4], "--server", url, *args[4:])
        assert (done.returncode, done.stderr) == (1, said), (args, done)


def test_the_read_only_port_refuses_streams(daemon: Daemon) -> None:
    path = f"/exec/default/{POD}/main?command=true&output=1"
    assert refusal(*upgrade(daemon.read_only_port, path, tls=False)) == (
        405, "Debug endpoints are disabled.")


def _cats(daemon: Daemon) -> int:
    ps = run_cli("exec", POD, "-c", "main", *flags(daemon), "--", "ps", "-o", "comm")
    assert ps.returncode == 0, ps
    return ps.stdout.split().count(b"cat")


def _whole_log(daemon: Daemon) -> str:
    return daemon.log_path.read_text(errors="replace")


def _no_cat_left(daemon: Daemon, what: str, log_from: int) -> None:
    """Wait until no exec'd ``cat`` runs in ``main``; if one stays, fail with what the
    container runs and what the daemon logged from ``log_from`` (an offset in its log) on,
    (a stdin close the runtime lost shows there as a stream that ended while its process
    stayed)."""
    try:
        wait_for(lambda: _cats(daemon) == 0, 30, what)
    except AssertionError as err:
        ps = run_cli("exec", POD, "-c", "main", *flags(daemon), "--", "ps")
        lines = [line for line in _whole_log(daemon)[log_from:].splitlines()
                 if "GET /pods" not in line][:16]
        raise AssertionError(f"{err}\nprocesses in main:\n{ps.stdout.decode()}"
                             f"{ps.stderr.decode()}the daemon's first log lines since "
                             "(the polling ps after them):\n" + "\n".join(lines)) from err


def test_dropped_exec_sessions_leave_no_threads_descriptors_or_processes(
        daemon: Daemon) -> None:
    assert daemon.proc is not None
    pid = daemon.proc.pid
    # Each session is dropped mid-stream: once its process runs and its stdin is attached
    # end to end (cat echoed a line sent through it). Dropped before, containerd 1.6 may
    # never close the process's stdin (its CloseIO comes before the process has started,
    # or while its stdin is being attached: seen once in 40 module runs with only "ready"
    # awaited), and the cat would stay: the runtime's race, not a stream.
    path = (f"/exec/default/{POD}/main?command=sh&command=-c&command=echo+ready%3B+exec+cat"
            "&input=1&output=1&error=1")

    def session(reset: bool) -> None:
        sock, head = upgrade(daemon.port, path)
        assert status_of(head) == 101, head
        seen = read_until_socket(sock, head, b"ready", 30, "the exec'd process to start")
        sock.sendall(client_frame(b"\x00through-stdin\n"))
        read_until_socket(sock, seen, b"through-stdin", 30, "cat to echo its stdin")
        if reset:  # half drop with a reset, half with a FIN
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()

    log_from = len(_whole_log(daemon))
    session(False)  # the first one may start lazy parts
    _no_cat_left(daemon, "the warm-up cat to end", log_from)
    threads, fds = counts(pid)
    log_from = len(_whole_log(daemon))
    for n in range(100):
        session(bool(n % 2))
    now = wait_for(lambda: (c := counts(pid))[0] <= threads and c[1] <= fds and c, 60,
                   f"the daemon back to {threads} threads and {fds} descriptors")
    assert now
    _no_cat_left(daemon, "every exec'd cat to end in the container", log_from)
