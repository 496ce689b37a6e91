"""Helpers for the exec, attach and port-forward end-to-end tests: the CLI as a process,
one on a terminal, a raw websocket upgrade to the daemon, and a process's thread and
descriptor counts."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import ssl
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from pathlib import Path

from tests.e2e.daemon import REPO

WS_KEY = "dGhlIHNhbXBsZSBub25jZQ=="


def cli(*args: str) -> list[str]:
    """The argv of ``kubelet-actors ARGS`` from this checkout."""
    return [sys.executable, "-m", "bin.main", *args]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def run_cli(*args: str, stdin: bytes = b"",
            timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(cli(*args), input=stdin, capture_output=True, timeout=timeout,
                          cwd=REPO, env=env(), check=False)


@contextlib.contextmanager
def on_terminal(argv: list[str], size: tuple[int, int] | None = None, *,
                cwd: Path | None = None,
                env: dict[str, str] | None = None) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """``argv`` run in a session of its own with a pseudo-terminal (``size``: rows and
    columns) as its stdin, stdout and stderr; yields the process and the terminal's other
    end (what a person types into and reads). After: the process killed if it still runs,
    the terminal closed."""
    leader, follower = os.openpty()
    if size is not None:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
    proc = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, cwd=cwd,
                            env=env, start_new_session=True)
    os.close(follower)
    try:
        yield proc, leader
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)


def upgrade(port: int, path: str, *, token: str = "", protocol: str = "v4.channel.k8s.io",
            tls: bool = True) -> tuple[socket.socket, bytes]:
    """A websocket upgrade request to the daemon; the socket and the response head."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock: socket.socket = raw
    if tls:
        sock = ssl._create_unverified_context().wrap_socket(raw)
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: Upgrade",
             "Upgrade: websocket", "Sec-WebSocket-Version: 13", f"Sec-WebSocket-Key: {WS_KEY}",
             f"Sec-WebSocket-Protocol: {protocol}"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return sock, head


def status_of(head: bytes) -> int:
    return int(head.split(b" ", 2)[1])


def counts(pid: int) -> tuple[int, int]:
    """The process's threads and open descriptors."""
    return (len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd")))


def server_flags(port: int) -> list[str]:
    return ["--server", f"https://127.0.0.1:{port}", "--insecure-skip-tls-verify"]


def write(path: Path, text: str) -> None:
    path.write_text(text)


def read_until(fd: int, needle: bytes, timeout: float, what: str) -> bytes:
    """Read ``fd`` until ``needle`` has come (or fail naming ``what`` and what came)."""
    import select
    import time

    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{what}: {needle!r} did not come; got {seen[-2000:]!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                raise AssertionError(f"{what}: ended before {needle!r}; got {seen[-2000:]!r}")
            seen += chunk
    return seen


def answer(sock: socket.socket, head: bytes) -> tuple[int, bytes]:
    """The status and body of a refused upgrade (the socket is closed)."""
    with sock:
        head, _, body = head.partition(b"\r\n\r\n")
        length = int(next((line.split(b":")[1] for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length")), b"0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return status_of(head), body


def refusal(sock: socket.socket, head: bytes) -> tuple[int, str]:
    """The status and the v1 Status's message of a refused upgrade."""
    import json

    code, body = answer(sock, head)
    return code, json.loads(body)["message"]


def client_frame(payload: bytes) -> bytes:
    """``payload`` as one binary websocket frame from a client (masked, as RFC 6455 wants
    of clients); under v4.channel.k8s.io its first byte is the channel (0: stdin)."""
    import os

    mask = os.urandom(4)
    size = len(payload)
    if size < 126:
        length = bytes([0x80 | size])
    elif size < 1 << 16:
        length = bytes([0x80 | 126]) + size.to_bytes(2, "big")
    else:
        length = bytes([0x80 | 127]) + size.to_bytes(8, "big")
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([0x82]) + length + mask + masked


def read_until_socket(sock: socket.socket, seen: bytes, needle: bytes, timeout: float,
                      what: str) -> bytes:
    """Read ``sock`` (after ``seen``) until ``needle`` has come, within ``timeout``."""
    import time

    deadline = time.monotonic() + timeout
    while needle not in seen:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            raise AssertionError(f"{what}: {needle!r} did not come; got {seen[-500:]!r}") from None
        if not chunk:
            raise AssertionError(f"{what}: ended before {needle!r}; got {seen[-500:]!r}")
        seen += chunk
    return seen
