"""What the kubelet needs of a containerd it runs itself (the embedded one).

Declared once: the runtime monitor uses it, and a trace records (and a replay answers)
exactly these calls.
"""

from __future__ import annotations

from typing import Protocol

MANAGED_CONTAINERD_TARGET = "containerd"
"""The service's name in traces (the ``target`` of its recorded calls)."""


class ManagedContainerd(Protocol):
    """A containerd process the kubelet started and keeps running."""

    def poll(self) -> int | None:
        """None while it runs, else its exit code."""
        ...

    def start(self, timeout: float | None = None) -> None:
        """Start it (again) and wait until it answers."""
        ...

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` of its log, for error messages."""
        ...
