"""The Node's events: a condition that changes status is recorded (upstream's node status
setters call recordEventFunc as they set MemoryPressure, DiskPressure, PIDPressure and
Ready; kubelet_node_status.go recordNodeStatusEvent words the message)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from runtime.events import reasons

# condition type -> (reason when True, reason when False)
_CONDITION_REASONS: tuple[tuple[str, str, str], ...] = (
    ("MemoryPressure", "NodeHasInsufficientMemory", "NodeHasSufficientMemory"),
    ("DiskPressure", "NodeHasDiskPressure", "NodeHasNoDiskPressure"),
    ("PIDPressure", "NodeHasInsufficientPID", "NodeHasSufficientPID"),
    ("Ready", reasons.NODE_READY, reasons.NODE_NOT_READY),
)


def condition_events(old: Iterable[Mapping[str, Any]] | None,
                     new: Iterable[Mapping[str, Any]]) -> list[str]:
    """The reasons to record, in upstream's setter order, for the conditions whose status
    differs between ``old`` (the API's copy) and ``new`` (what is posted now)."""
    before = {str(c.get("type")): c.get("status") for c in old or ()}
    after = {str(c.get("type")): c.get("status") for c in new}
    out: list[str] = []
    for kind, if_true, if_false in _CONDITION_REASONS:
        status = after.get(kind)
        if status is None or status == before.get(kind):
            continue
        if status == "True":
            out.append(if_true)
        elif status == "False":
            out.append(if_false)
    return out


def node_event_message(node_name: str, reason: str) -> str:
    return f"Node {node_name} status is now: {reason}"
