"""A sampler of what many pods cost the node, for the scale bench: where a limit comes near.

Every ``interval`` seconds, on a thread of its own, it reads the node's task count
(/proc/loadavg), containerd's and the daemon's threads and open files (/proc/<pid>/status,
/proc/<pid>/fd) and MemAvailable, and keeps the peak of each by phase (the bench names the
phase it is in) and the last samples (what the node looked like when something broke).
Reads are cheap (no scan of every process), so it costs the measured run little.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, fields, replace

PidOf = Callable[[], "int | None"]


@dataclass(frozen=True, slots=True)
class NodeSample:
    """One look at the node; -1 where a process was not there."""

    at: float
    tasks: int
    containerd_threads: int
    containerd_fds: int
    daemon_threads: int
    daemon_fds: int
    mem_available_mib: int

    def line(self) -> str:
        return (f"{time.strftime('%H:%M:%S', time.localtime(self.at))} tasks={self.tasks} "
                f"containerd threads={self.containerd_threads} fds={self.containerd_fds} "
                f"daemon threads={self.daemon_threads} fds={self.daemon_fds} "
                f"MemAvailable={self.mem_available_mib} MiB")


def _threads(pid: int | None) -> int:
    if pid is None:
        return -1
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def _fds(pid: int | None) -> int:
    if pid is None:
        return -1
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def _tasks() -> int:
    with open("/proc/loadavg") as f:
        return int(f.read().split()[3].split("/")[1])


def _mem_available_mib() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return -1


def sample(containerd_pid: int | None, daemon_pid: int | None) -> NodeSample:
    """The node now."""
    return NodeSample(time.time(), _tasks(), _threads(containerd_pid), _fds(containerd_pid),
                      _threads(daemon_pid), _fds(daemon_pid), _mem_available_mib())


def peak(a: NodeSample, b: NodeSample) -> NodeSample:
    """Field by field the larger (MemAvailable: the smaller), at the later time."""
    merged = {f.name: max(getattr(a, f.name), getattr(b, f.name)) for f in fields(a)}
    merged["mem_available_mib"] = min(a.mem_available_mib, b.mem_available_mib)
    return NodeSample(**merged)


class NodeWatch:
    """Samples the node on a thread until ``stop()``; peaks by phase, the last samples."""

    def __init__(self, containerd_pid: PidOf, daemon_pid: PidOf, interval: float = 1.0,
                 keep: int = 30) -> None:
        self._containerd_pid = containerd_pid
        self._daemon_pid = daemon_pid
        self._interval = interval
        self._lock = threading.Lock()
        self._phase = "start"
        self._peaks: dict[str, NodeSample] = {}
        self._last: deque[NodeSample] = deque(maxlen=keep)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="node-watch", daemon=True)

    def start(self) -> NodeWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def phase(self, name: str) -> None:
        """Samples from now on count for phase ``name``."""
        with self._lock:
            self._phase = name
        self._take()

    def peaks(self) -> dict[str, NodeSample]:
        with self._lock:
            return dict(self._peaks)

    def peak_of(self, prefix: str) -> NodeSample | None:
        """The peak over every phase whose name starts with ``prefix``."""
        found = [s for name, s in self.peaks().items() if name.startswith(prefix)]
        if not found:
            return None
        out = found[0]
        for s in found[1:]:
            out = peak(out, s)
        return out

    def last(self) -> list[NodeSample]:
        with self._lock:
            return list(self._last)

    def _take(self) -> None:
        s = sample(self._containerd_pid(), self._daemon_pid())
        with self._lock:
            self._last.append(s)
            old = self._peaks.get(self._phase)
            self._peaks[self._phase] = s if old is None else replace(peak(old, s), at=s.at)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._take()
