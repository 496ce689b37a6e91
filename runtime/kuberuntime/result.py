"""What one sync or kill did, step by step (upstream PodSyncResult)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType

from runtime.errors import SyncError

CONTAINER_ACTIONS = frozenset({"StartContainer", "KillContainer"})
"""The steps on one container; the others (CreatePodSandbox, KillPodSandbox,
MountVolumes) are on the pod."""


class StepResult(Struct, frozen=True):
    """One action on one target: ``error`` is an upstream reason ("" when it worked).

    ``backoff`` is the delay in seconds of a back-off wait (a CrashLoopBackOff or
    ImagePullBackOff step), for whoever shows what a sync did (the trace tools draw it).
    Any other step leaves it UNSET rather than None: msgspec leaves UNSET fields out of the
    JSON, so such a step encodes exactly as it did before the field existed and recorded
    traces still compare equal on replay. (``omit_defaults`` would do it for None, but also
    drop ``error`` and ``message`` of every step that worked.) Read it as
    ``backoff_seconds``.
    """

    action: str  # StartContainer, KillContainer, CreatePodSandbox, KillPodSandbox, MountVolumes,
    #              PrepareDynamicResources, CreatePodCgroup
    target: str  # a container name, or the pod for sandbox steps
    error: str = ""
    message: str = ""
    backoff: float | UnsetType = UNSET

    @classmethod
    def failed(cls, action: str, target: str, error: SyncError) -> StepResult:
        """The step ``action`` on ``target`` that raised ``error``, its back-off delay kept."""
        backoff: float | UnsetType = UNSET if error.backoff is None else error.backoff
        return cls(action, target, error.reason, error.message, backoff)

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def backoff_seconds(self) -> float | None:
        """The back-off delay in seconds; None unless the step is a back-off wait."""
        return None if isinstance(self.backoff, UnsetType) else self.backoff


class PodSyncResult(Struct, frozen=True):
    steps: tuple[StepResult, ...] = ()

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)

    @property
    def failures(self) -> tuple[StepResult, ...]:
        return tuple(s for s in self.steps if not s.ok)

    def failure_for(self, container: str) -> StepResult | None:
        """The last failed step of a container, for its waiting reason. Steps on the pod
        (its sandbox, its volumes) are not a container's: as upstream, a container of a
        pod whose sandbox or volumes failed shows ContainerCreating."""
        return next((s for s in reversed(self.steps) if s.target == container and not s.ok
                     and s.action in CONTAINER_ACTIONS), None)

    def __str__(self) -> str:
        if self.ok:
            return "ok"
        return "; ".join(f"{s.action} {s.target}: {s.error}: {s.message}" for s in self.failures)
