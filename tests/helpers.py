"""Small helpers shared by the tests."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

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
