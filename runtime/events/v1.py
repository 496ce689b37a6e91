"""A core/v1 Event as the kubelet makes it (upstream recorder makeEvent), and its JSON.

Times are float seconds since the epoch; the JSON has them as metav1.Time does (RFC 3339,
whole seconds, UTC). ``go_duration`` prints a duration as Go's time.Duration.String does,
since upstream's messages embed durations that way ("Successfully pulled image ... in
1.234s").
"""

from __future__ import annotations

import calendar
import time
from typing import Any

import msgspec
from msgspec import Struct

from runtime.apitime import rfc3339
from runtime.events.recorder import ObjectRef

DEFAULT_NAMESPACE = "default"
"""Where events about cluster-scoped objects (the Node) go."""


class CoreEvent(Struct, frozen=True):
    """One v1 Event: what the correlator works on and the writer sends."""

    name: str
    namespace: str
    involved: ObjectRef
    reason: str
    message: str
    type: str
    first_timestamp: float
    last_timestamp: float
    count: int = 1
    source_component: str = ""
    source_host: str = ""
    reporting_controller: str = ""
    reporting_instance: str = ""
    resource_version: str = ""

    def replace(self, **changes: Any) -> CoreEvent:
        return msgspec.structs.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if self.resource_version:
            meta["resourceVersion"] = self.resource_version
        source: dict[str, str] = {}
        if self.source_component:
            source["component"] = self.source_component
        if self.source_host:
            source["host"] = self.source_host
        body: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Event", "metadata": meta,
            "involvedObject": self.involved.to_json(), "reason": self.reason,
            "message": self.message, "source": source,
            "firstTimestamp": rfc3339(self.first_timestamp),
            "lastTimestamp": rfc3339(self.last_timestamp),
            "count": self.count, "type": self.type, "eventTime": None,
            "reportingComponent": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
        }
        return body

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> CoreEvent:
        """The API server's answer, for the correlator's state (name, version, count)."""
        meta = obj.get("metadata") or {}
        inv = obj.get("involvedObject") or {}
        source = obj.get("source") or {}
        return cls(
            name=str(meta.get("name", "")), namespace=str(meta.get("namespace", "")),
            involved=ObjectRef(str(inv.get("kind", "")), str(inv.get("namespace", "")),
                               str(inv.get("name", "")), str(inv.get("uid", "")),
                               str(inv.get("apiVersion", "")),
                               str(inv.get("resourceVersion", "")),
                               str(inv.get("fieldPath", ""))),
            reason=str(obj.get("reason", "")), message=str(obj.get("message", "")),
            type=str(obj.get("type", "")),
            first_timestamp=parse_rfc3339(obj.get("firstTimestamp")),
            last_timestamp=parse_rfc3339(obj.get("lastTimestamp")),
            count=int(obj.get("count") or 0),
            source_component=str(source.get("component", "")),
            source_host=str(source.get("host", "")),
            reporting_controller=str(obj.get("reportingComponent", "")),
            reporting_instance=str(obj.get("reportingInstance", "")),
            resource_version=str(meta.get("resourceVersion", "")))


def make_event(ref: ObjectRef, type: str, reason: str, message: str, at: float,
               component: str, host: str) -> CoreEvent:
    """A new event (upstream makeEvent): named ``<object>.<nanoseconds in hex>``, in the
    object's namespace (``default`` for a cluster-scoped one), count 1."""
    return CoreEvent(
        name=f"{ref.name}.{unix_nanos(at):x}", namespace=ref.namespace or DEFAULT_NAMESPACE,
        involved=ref, reason=reason, message=message, type=type, first_timestamp=at,
        last_timestamp=at, count=1, source_component=component, source_host=host,
        reporting_controller=component, reporting_instance=host)


def unix_nanos(at: float) -> int:
    return round(at * 1e9)


def parse_rfc3339(value: Any) -> float:
    if not isinstance(value, str) or not value:
        return 0.0
    return float(calendar.timegm(time.strptime(value[:19], "%Y-%m-%dT%H:%M:%S")))


def go_duration(seconds: float) -> str:
    """``seconds`` as Go's time.Duration.String: 0s, 250ms, 1.5s, 2m3.25s, 1h0m0s;
    sub-millisecond values in µs or ns."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000:
        return f"{sign}{nanos}ns"
    if nanos < 1_000_000:
        return f"{sign}{_trim(nanos, 1_000)}µs"
    if nanos < 1_000_000_000:
        return f"{sign}{_trim(nanos, 1_000_000)}ms"
    hours, rest = divmod(nanos, 3_600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = f"{_trim(rest, 10**9)}s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return f"{sign}{text}"


def truncate_ms(seconds: float) -> float:
    """Go's Duration.Truncate(time.Millisecond)."""
    return int(seconds * 1000) / 1000


def _trim(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{str(frac).rjust(digits, '0').rstrip('0')}"
