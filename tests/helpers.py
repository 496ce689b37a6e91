"""Small helpers shared by the tests."""

from __future__ import annotations

import os
import shutil
import socket
import socketserver
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from msgspec.structs import replace

from runtime.kuberuntime.volume_mounts import MountPoint

T = TypeVar("T")


def wait_for(
    predicate: Callable[[], T],
    timeout: float,
    what: str,
    *,
    interval: float = 0.05,
    ignore: tuple[type[BaseException], ...] = (),
) -> T:
    """Call ``predicate`` until it returns something truthy, and return that.

    Fails the test (AssertionError) after ``timeout`` seconds, naming ``what`` was awaited
    and the last value or error seen. Exceptions of the ``ignore`` types count as "not yet";
    any other exception propagates at once.
    """
    deadline = time.monotonic() + timeout
    last: object = None
    last_error: BaseException | None = None
    while True:
        try:
            value = predicate()
        except ignore as err:
            last_error = err
        else:
            if value:
                return value
            last = value
        if time.monotonic() >= deadline:
            detail = f"last value {last!r}"
            if last_error is not None:
                detail += f", last error {type(last_error).__name__}: {last_error}"
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what} ({detail})")
        time.sleep(interval)


def serve(server: socketserver.TCPServer) -> Iterator[int]:
    """Serve ``server`` on a thread for a fixture (``yield from serve(...)``): its port;
    after, shut down and closed."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def host_path_case(tmp_path: Path, prepare: str | None) -> Path:
    """A hostPath for a type-check case: nothing there (None), a "dir", a "file", or a path
    whose parent is missing ("no-parent")."""
    path = tmp_path / "thing"
    if prepare == "dir":
        path.mkdir()
    elif prepare == "file":
        path.write_text("x")
    elif prepare == "no-parent":
        path = tmp_path / "missing" / "thing"
    return path


def promtool_check(text: str) -> None:
    """Prometheus' own checker on a metrics exposition: it must parse and pass its lint."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: scripts/setup.sh installs Debian's prometheus"
    done = subprocess.run([promtool, "check", "metrics"], input=text.encode(),
                          capture_output=True, timeout=60, check=False)
    # Exit 1: it does not parse; exit 3: it parses but breaks Prometheus' naming lint.
    assert done.returncode == 0, done.stderr.decode() + done.stdout.decode()


class FakeVolumeMounts:
    """A mount table in memory for runtime.kuberuntime.volume_mounts.VolumeMounts: each
    call recorded (``calls``), with whether the directory existed when it came."""

    def __init__(self, fail: str = "") -> None:
        self.fail = fail  # what each mount answers ("": mounted)
        self.table: list[MountPoint] = []  # absolute paths, in mount order
        self.calls: list[tuple[str, str, bool]] = []  # (method, path, the dir existed)

    def mounts_under(self, directory: str) -> tuple[MountPoint, ...]:
        root = directory.rstrip("/")
        found = [replace(p, path=os.path.relpath(p.path, root) if p.path != root else "")
                 for p in reversed(self.table)
                 if p.path == root or p.path.startswith(root + "/")]
        return tuple(sorted(found, key=lambda p: -(p.path.count("/") + 1 if p.path else 0)))

    def mount(self, source: str, path: str, fstype: str, options: tuple[str, ...]) -> str:
        self.calls.append(("mount", path, os.path.isdir(path)))
        if self.fail:
            return self.fail
        # The kernel shows a hugetlbfs's page size as pagesize=2M.
        shown = tuple(o[:-1] if o.startswith("pagesize=") and o.endswith("i") else o
                      for o in options)
        self.table.append(MountPoint(path, fstype, shown))
        return ""

    def tear_down(self, path: str) -> str:
        self.calls.append(("tear_down", path, os.path.isdir(path)))
        self.table = [p for p in self.table if p.path != path]
        shutil.rmtree(path, ignore_errors=True)
        return ""


def listening(host: str, port: int) -> bool:
    """Whether something accepts TCP connections on ``host``:``port`` now (a server in a
    pod, say), for ``wait_for``."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False
