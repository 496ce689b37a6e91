"""Undo everything an embedded containerd made on this machine, whatever state it is in.

A private containerd of the test bed lives in one directory (``base``), but what it makes
reaches out of it: shim processes and their sockets in /run/containerd/s, runc state in
/run/containerd/runc, mounts under ``base``, CNI result caches, and a bridge. A run that
died leaves all of that behind; ``cleanup_runtime_dir`` removes it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from loguru import logger

from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.errors import CRIError
from runtime.mounts import is_mount_point, mount_points_under

RUNC_ROOT = "/run/containerd/runc"
POLL_S = 0.05


def _until(done: Callable[[], bool], timeout: float) -> bool:
    """Poll ``done`` until it holds or ``timeout`` seconds pass; whether it held."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True

def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _gone(pid: int) -> bool:
    return not _alive(pid)


def shims_for(socket_path: Path) -> dict[int, str]:
    """The containerd-shim processes serving the containerd at ``socket_path``: pid -> id."""
    found: dict[int, str] = {}
    for pid in _pids():
        argv = _cmdline(pid)
        if not argv or not os.path.basename(argv[0]).startswith("containerd-shim"):
            continue
        if "-address" in argv and str(socket_path) in argv:
            task_id = argv[argv.index("-id") + 1] if "-id" in argv else ""
            found[pid] = task_id
    return found


def _kill_shims(socket_path: Path) -> None:
    shims = shims_for(socket_path)
    if not shims:
        return
    logger.warning("killing {} leftover shim(s) of {}", len(shims), socket_path)
    children = [pid for pid in _pids() if _ppid(pid) in shims]
    for pid in [*children, *shims]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in [*children, *shims]:
        if not _until(functools.partial(_gone, pid), 5.0):
            logger.error("pid {} outlived its SIGKILL by 5 s", pid)
    for task_id in shims.values():
        # The socket a SIGKILLed shim leaves in the shared /run/containerd/s (containerd
        # 1.6 names it sha256("<containerd socket>/<namespace>/<id>")).
        digest = hashlib.sha256(f"{socket_path}/k8s.io/{task_id}".encode()).hexdigest()
        with contextlib.suppress(OSError):
            os.unlink(f"/run/containerd/s/{digest}")


def _remove_runc_state(base: Path) -> None:
    """runc's state dirs (in the shared /run/containerd/runc) of containers under ``base``."""
    for state in Path(RUNC_ROOT).glob("*/*/state.json"):
        try:
            rootfs = str(json.loads(state.read_text())["config"]["rootfs"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if rootfs.startswith(str(base) + "/"):
            shutil.rmtree(state.parent, ignore_errors=True)


def mounts_under(base: Path) -> list[str]:
    """Mount points at or under ``base``, deepest first."""
    own = [str(base)] if is_mount_point(str(base)) else []
    return [*mount_points_under(str(base)), *own]


def _unmount_all(base: Path) -> None:
    for _ in range(5):
        points = mounts_under(base)
        if not points:
            return
        for point in points:
            if subprocess.run(["umount", point], capture_output=True, check=False).returncode:
                subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    leftover = mounts_under(base)
    if leftover:
        logger.error("still mounted under {}: {}", base, leftover)


def _remove_all_pods(endpoint: str) -> None:
    try:
        with CRIClient(endpoint, timeout=30.0) as client:
            for c in client.list_containers():
                with contextlib.suppress(CRIError):
                    client.stop_container(c.id, 0)
                    client.remove_container(c.id)
            for p in client.list_pod_sandbox():
                with contextlib.suppress(CRIError):
                    client.stop_pod_sandbox(p.id)
                    client.remove_pod_sandbox(p.id)
    except CRIError as err:
        logger.warning("could not remove the pods of {}: {}", endpoint, err)


def _stop_by_pid_file(pid_path: Path, config_path: Path) -> None:
    try:
        pid = int(pid_path.read_text().strip())
    except (OSError, ValueError):
        return
    if str(config_path) not in _cmdline(pid):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if not _until(functools.partial(_gone, pid), 10.0):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _network_name(bridge: str) -> str:
    return f"kubelet-actors-{bridge}"


def cleanup_runtime_dir(base: Path, bridge: str, emb: EmbeddedContainerd | None = None) -> None:
    """Undo everything an embedded containerd on ``base`` made, then remove ``base``.

    Pods first (through CRI, so the CNI DEL runs), then containerd, leftover shims and their
    processes, mounts under ``base`` (rootfs, shm, netns), CNI result caches of its network,
    the bridge, and the directory.
    """
    containerd_dir = base / "containerd"
    socket_path = containerd_dir / "containerd.sock"
    if emb is not None and emb.is_running():
        _remove_all_pods(emb.endpoint)
        emb.stop()
    else:
        _stop_by_pid_file(containerd_dir / "containerd.pid", containerd_dir / "config.toml")
    _kill_shims(socket_path)
    _remove_runc_state(base)
    _unmount_all(base)
    for cached in Path("/var/lib/cni/results").glob(f"{_network_name(bridge)}-*"):
        cached.unlink(missing_ok=True)
    subprocess.run(["ip", "link", "delete", bridge], capture_output=True, check=False)
    if mounts_under(base):
        logger.error("not removing {}: mounts remain", base)
        return
    shutil.rmtree(base, ignore_errors=True)
