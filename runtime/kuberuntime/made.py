"""What one sync made, as it made it: the pod worker reads its pod's status right after
the sync from it, with no listing of the runtime (actors.kubelet.pod_worker).

The sync knows the sandbox it ran (and read the status of, for its IP) and the ids of
the containers it created; with the sandboxes and containers the status before the sync
showed, that is everything the runtime holds of the pod, since only the pod's own worker
makes things of it. A container whose start failed after its creation is not here: the
PLEG's relist after the sync shows it, and differs from what the worker read, so the
pod is synced again (actors.kubelet.pleg).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime.cri.types import PodSandboxStatus
from runtime.ids import ContainerID, SandboxID
from runtime.kuberuntime.podstatus import ListedSandbox, PodListing, RuntimePodStatus


@dataclass(slots=True)
class MadeBySync:
    """Filled by KubeRuntimeManager.sync_pod as it makes things (not a message)."""

    sandboxes: list[PodSandboxStatus] = field(default_factory=list)
    containers: list[ContainerID] = field(default_factory=list)

    @property
    def anything(self) -> bool:
        return bool(self.sandboxes or self.containers)

    def listing(self, before: RuntimePodStatus) -> PodListing:
        """The pod's sandboxes and containers now: those of ``before`` and those made."""
        sandboxes = [ListedSandbox(s.id, s.created_at, s.metadata.attempt)
                     for s in (*before.sandbox_statuses, *self.sandboxes)]
        containers = [c.id for c in before.container_statuses] + self.containers
        return PodListing(before.uid, tuple(dict.fromkeys(sandboxes)),
                          tuple(dict.fromkeys(containers)))

    def known_sandboxes(self) -> dict[SandboxID, PodSandboxStatus]:
        """The statuses read of the sandboxes made: a container's start changes none."""
        return {s.id: s for s in self.sandboxes}
