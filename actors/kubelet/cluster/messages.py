"""The messages of cluster mode: immutable values, JSON-encodable, no protobuf."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct

from actors.core.trace.names import message
from runtime.pod.model import Pod
from runtime.status.types import PodCondition, PodStatus


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


class PodConditions(Struct, frozen=True):
    """The conditions of one pod's status in the API that the kubelet does not own."""

    uid: str
    conditions: tuple[PodCondition, ...]


@message("APIPodConditions")
class APIPodConditions(Struct, frozen=True):
    """The API pod source to the status manager, when they changed: for every pod bound to
    this node that has any, the conditions others set in its status (a readiness gate's),
    which the kubelet keeps in the status it computes and evaluates readiness gates
    against (upstream reads them from the pod the API sent). Mirror pods are left out:
    upstream evaluates a static pod's gates against the static pod, not its mirror."""

    pods: tuple[PodConditions, ...]


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


@message("CertificateRotated")
class CertificateRotated(Struct, frozen=True):
    """A certificate actor's round ended (on its pool thread): whether a new pair is in
    use."""

    ok: bool
