"""The emulated API server for the API drills: a subprocess, driven over its control port.

The emulator lives in the source tree's tests/apiserver (it is test code, pinned by kubectl;
the product does not ship or import it). An API drill starts it as ``python -m
tests.apiserver`` from the checkout this code runs from, over TLS on a free port, with its
control endpoint (tests/apiserver/control.py) on another, and injects faults, partitions
and compactions through that endpoint, which also answers what the server was asked and
holds. From an installed wheel there is no tests/ directory: :func:`emulator_missing` says
so, and the drill CLI reports the API drills as not run, with that reason.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import actors
from runtime.errors import KubeletError

START_TIMEOUT_S = 30.0
READY = "ready.json"


def code_root() -> Path:
    """The directory this process's code comes from (a checkout, or site-packages)."""
    return Path(actors.__file__).resolve().parents[1]


def emulator_missing() -> str | None:
    """Why the emulated API server cannot run from here, or None when it can."""
    main = code_root() / "tests" / "apiserver" / "__main__.py"
    if main.is_file():
        return None
    return ("needs the emulated API server (tests/apiserver), which is in a source checkout "
            "of kubelet-actors, not in an installed package: run it from a checkout")


class EmulatorError(KubeletError):
    """The emulated API server did not start, or its control endpoint refused a call."""


@dataclass(frozen=True, slots=True)
class Seen:
    """One request the API server was asked (tests/apiserver/requestlog.Request)."""

    at: float
    verb: str
    resource: str
    name: str
    resource_version: str | None
    fault_code: int


class Emulator:
    """``python -m tests.apiserver`` in ``workdir``; ``stop()`` ends it (SIGTERM, then
    SIGKILL). ``kubeconfig`` is the node's, as the daemon joins with it."""

    def __init__(self, workdir: Path, node: str, bookmark_interval: float = 0.5) -> None:
        missing = emulator_missing()
        if missing is not None:
            raise EmulatorError(missing)
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.kubeconfig = workdir / "kubelet.kubeconfig"
        self.log = workdir / "apiserver.log"
        ready = workdir / READY
        args = [sys.executable, "-m", "tests.apiserver", "--dir", str(workdir), "--node", node,
                "--admin-kubeconfig", str(workdir / "admin.kubeconfig"), "--port", "0",
                "--control-port", "0", "--ready-file", str(ready),
                "--bookmark-interval", str(bookmark_interval), "--parent-pid", str(os.getpid())]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(args, cwd=code_root(), stdout=out,
                                         stderr=subprocess.STDOUT,
                                         env={**os.environ, "PYTHONPATH": str(code_root())})
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise EmulatorError("the emulated API server did not start: "
                                    + self.log.read_text(errors="replace")[-1500:])
            time.sleep(0.05)
        urls = json.loads(ready.read_text())
        self.url: str = urls["api"]
        self.control: str = urls["control"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    # --- the control endpoint ----------------------------------------------------------

    def call(self, method: str, path: str, body: dict[str, Any] | None = None,
             missing_ok: bool = False) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.control + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:
            if err.code == 404 and missing_ok:
                return None
            detail = err.read().decode(errors="replace")
            raise EmulatorError(f"{method} {path}: {err.code} {detail}") from err
        except OSError as err:
            raise EmulatorError(f"{method} {path}: {err}") from err

    def inject(self, *, verb: str | None = None, resource: str | None = None,
               code: int | None = None, retry_after: int | None = None,
               latency: float = 0.0, times: int | None = None) -> None:
        self.call("POST", "/faults", {"verb": verb, "resource": resource, "code": code,
                                      "retry_after": retry_after, "latency": latency,
                                      "times": times})

    def clear_faults(self) -> None:
        self.call("DELETE", "/faults")

    def drop_watches(self, resource: str | None = None) -> int:
        return int(self.call("POST", "/watches/drop", {"resource": resource})["watches"])

    def expire_watches(self, resource: str | None = None) -> int:
        return int(self.call("POST", "/watches/expire", {"resource": resource})["watches"])

    def open_watches(self, resource: str) -> int:
        return int(self.call("GET", f"/watches?resource={resource}")["open"])

    def compact(self) -> int:
        return int(self.call("POST", "/compact")["compacted"])

    def partition(self) -> None:
        self.call("POST", "/partition", {})

    def heal(self) -> None:
        self.call("POST", "/heal")

    def requests(self, since: float = 0.0) -> list[Seen]:
        items = self.call("GET", f"/requests?since={since!r}")["items"]
        return [Seen(**item) for item in items]

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        found = self.call("GET", f"/objects/{plural}/{namespace or '-'}/{name}",
                          missing_ok=True)
        return dict(found) if found is not None else None

    def create(self, plural: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self.call("POST", f"/objects/{plural}/{namespace or '-'}", body))

    def pod_history(self) -> list[dict[str, Any]]:
        return list(self.call("GET", "/history/pods")["items"])
