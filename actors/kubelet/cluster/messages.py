"""The messages of cluster mode: immutable values, JSON-encodable, no protobuf."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from actors.core.trace.names import message
from runtime.pod.model import Pod
from runtime.status.types import PodStatus


@message("ReportHealth")
@dataclass(frozen=True, slots=True)
class ReportHealth:
    """Tell: the sync loop answers ``reply_to`` with a HealthReport (no actor waits)."""

    reply_to: str


@message("HealthReport")
@dataclass(frozen=True, slots=True)
class HealthReport:
    """The sync loop's health checks, by name: None when healthy, else why not."""

    checks: tuple[tuple[str, str | None], ...]


@message("APIPodList")
@dataclass(frozen=True, slots=True)
class APIPodList:
    """The reflector's whole set of this node's pods after a change (the API's JSON)."""

    resource_version: str
    items: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class APIPod:
    """What the pod writer needs of a pod as the API server holds it."""

    namespace: str
    name: str
    uid: str
    mirror_of: str  # the kubernetes.io/config.mirror annotation ("" for other pods)
    deleting: bool
    status: Mapping[str, Any]


@message("APIPods")
@dataclass(frozen=True, slots=True)
class APIPods:
    """Every pod bound to this node as the API holds it, mirror pods included."""

    pods: tuple[APIPod, ...]


@message("PodStatusChanged")
@dataclass(frozen=True, slots=True)
class PodStatusChanged:
    """The status manager computed a new status for ``pod``."""

    pod: Pod
    status: PodStatus


@message("StaticPodsWanted")
@dataclass(frozen=True, slots=True)
class StaticPodsWanted:
    """Every source has spoken, and these are the config hashes of the static pods the
    node wants: a mirror pod of any other hash is an orphan (upstream's
    HandlePodCleanups deletes it)."""

    hashes: tuple[str, ...]
