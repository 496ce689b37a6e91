"""images.sh on this machine: the registry `serve` starts does not keep the script's lock.

A registry that inherited the lock held it for its whole life, so every later images.sh
(the test run's own `serve`, `status`, `stop`) waited for ever: a fresh machine, where
setup.sh starts the registry, hung there. This runs a second registry of its own (its own
port and directories), so it shares nothing with the test bed's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.app.testbed.registry import IMAGES_SH
from tests.e2e.daemon import free_port

STEP_TIMEOUT_S = 60.0


@pytest.fixture
def own_registry_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = dict(os.environ,
               KA_IMAGES_DIR=str(tmp_path / "images"),
               KA_REGISTRY_DIR=str(tmp_path / "registry"),
               KA_REGISTRY_ADDR=f"127.0.0.1:{free_port()}")
    try:
        yield env
    finally:
        # A timeout is the failure under test (the registry holds the lock): stopped below.
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run(["bash", str(IMAGES_SH), "stop"], env=env, capture_output=True,
                           timeout=STEP_TIMEOUT_S, check=False)
        pid_file = tmp_path / "registry" / "registry.pid"
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGTERM)


def _images_sh(env: dict[str, str], *commands: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(IMAGES_SH), *commands], env=env, capture_output=True,
                          text=True, timeout=STEP_TIMEOUT_S, check=True)


def test_the_registry_serve_starts_leaves_the_lock_to_the_next_images_sh(
        own_registry_env: dict[str, str]) -> None:
    _images_sh(own_registry_env, "serve")
    pid = int((Path(own_registry_env["KA_REGISTRY_DIR"]) / "registry.pid").read_text())
    lock = Path(own_registry_env["KA_IMAGES_DIR"]) / ".images.sh.lock"
    held = {os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}
    assert str(lock) not in held, f"the registry (pid {pid}) holds {lock}"
    # Each of these takes the lock: with it held by the registry they never return.
    status = _images_sh(own_registry_env, "status")
    assert own_registry_env["KA_REGISTRY_ADDR"].split(":")[1] in status.stdout + status.stderr
    _images_sh(own_registry_env, "stop")
    assert not Path(f"/proc/{pid}").exists() or _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except OSError:
        return True
