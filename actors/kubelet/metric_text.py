"""Prometheus text for the kubelet's registries, with upstream's metric names.

prometheus-client writes every counter as ``<name>_total`` and adds a ``<name>_created``
series beside it. Upstream's kubelet (Go's client) writes a counter under the name it was
given, and some of those names have no ``_total`` (``kubelet_evictions``,
``kubelet_evented_pleg_connection_success_count``); it has no ``_created`` series. An
``ExactCounter`` keeps its name; ``prometheus_text`` writes a registry with those names and
without ``_created`` series. Every /metrics endpoint writes through it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.samples import Sample

CREATED = "_created"


class ExactCounter(Counter):
    """A counter whose one series is named as given, with no ``_total`` suffix."""

    def _child_samples(self) -> Iterable[Sample]:
        return (Sample("", {}, self._value.get(), None, None),)


class _Families:
    """A collector that hands generate_latest families already read."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = tuple(families)

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


def _without_created(family: Metric) -> Metric:
    family.samples = [s for s in family.samples if s.name != family.name + CREATED]
    return family


def prometheus_text(registry: CollectorRegistry) -> bytes:
    """The registry in the Prometheus text format (0.0.4), named as upstream names it."""
    families = [_without_created(f) for f in registry.collect()]
    text = generate_latest(_Families(families)).decode()
    for family in families:
        if family.type == "counter" and any(s.name == family.name for s in family.samples):
            # generate_latest names every counter's HELP and TYPE lines <name>_total.
            text = text.replace(f"# HELP {family.name}_total ", f"# HELP {family.name} ", 1)
            text = text.replace(f"# TYPE {family.name}_total counter\n",
                                f"# TYPE {family.name} counter\n", 1)
    return text.encode()
