"""The messages of cluster mode: immutable values, JSON-encodable, no protobuf."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct

from actors.core.trace.names import message
from runtime.pod.model import Pod
from runtime.status.types import PodStatus


@message("ReportHealth")
class ReportHealth(Struct, frozen=True):
    """Tell: the sync loop answers ``reply_to`` with a HealthReport (no actor waits)."""

    reply_to: str


@message("HealthReport")
class HealthReport(Struct, frozen=True):
    """The sync loop's health checks, by name: None when healthy, else why not."""

    checks: tuple[tuple[str, str | None], ...]


@message("APIPodList")
class APIPodList(Struct, frozen=True):
    """The reflector's whole set of this node's pods after a change (the API's JSON)."""

    resource_version: str
    items: tuple[Mapping[str, Any], ...]


class APIPod(Struct, frozen=True):
    """What the pod writer needs of a pod as the API server holds it."""

    namespace: str
    name: str
    uid: str
    mirror_of: str  # the kubernetes.io/config.mirror annotation ("" for other pods)
    deleting: bool
    status: Mapping[str, Any]


@message("APIPods")
class APIPods(Struct, frozen=True):
    """Every pod bound to this node as the API holds it, mirror pods included."""

    pods: tuple[APIPod, ...]


@message("PodStatusChanged")
class PodStatusChanged(Struct, frozen=True):
    """The status manager computed a new status for ``pod``."""

    pod: Pod
    status: PodStatus


@message("StaticPodsWanted")
class StaticPodsWanted(Struct, frozen=True):
    """Every source has spoken, and these are the config hashes of the static pods the
    node wants: a mirror pod of any other hash is an orphan (upstream's
    HandlePodCleanups deletes it)."""

    hashes: tuple[str, ...]
