"""The event of one probe attempt (upstream prober.probe): Unhealthy when it failed or
errored, ProbeWarning when it succeeded with a warning, nothing otherwise."""

from __future__ import annotations

from runtime.events import reasons
from runtime.prober.results import ProbeResult

WARNING_PREFIX = "Probe terminated redirects"
"""What an httpGet probe's output starts with when it succeeded with a warning (a
redirect it did not follow; runtime.prober.handlers)."""


def probe_event(kind: str, result: ProbeResult, output: str) -> tuple[str, str, str] | None:
    """(type, reason, message) for an attempt of a ``kind`` probe ("liveness"...)."""
    name = kind.capitalize()
    if result == ProbeResult.FAILURE:
        return reasons.WARNING, reasons.CONTAINER_UNHEALTHY, f"{name} probe failed: {output}"
    if result == ProbeResult.UNKNOWN:
        return reasons.WARNING, reasons.CONTAINER_UNHEALTHY, f"{name} probe errored: {output}"
    if output.startswith(WARNING_PREFIX):
        return (reasons.WARNING, reasons.CONTAINER_PROBE_WARNING,
                f"{name} probe warning: {output}")
    return None
