"""What one sync or kill did, step by step (upstream PodSyncResult)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StepResult:
    """One action on one target: ``error`` is an upstream reason ("" when it worked)."""

    action: str  # StartContainer, KillContainer, CreatePodSandbox, KillPodSandbox, ...
    target: str  # a container name, or the pod for sandbox steps
    error: str = ""
    message: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


@dataclass(frozen=True, slots=True)
class PodSyncResult:
    steps: tuple[StepResult, ...] = ()

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)

    @property
    def failures(self) -> tuple[StepResult, ...]:
        return tuple(s for s in self.steps if not s.ok)

    def failure_for(self, target: str) -> StepResult | None:
        """The last failed step for a container, for its waiting reason."""
        return next((s for s in reversed(self.steps) if s.target == target and not s.ok), None)

    def __str__(self) -> str:
        if self.ok:
            return "ok"
        return "; ".join(f"{s.action} {s.target}: {s.error}: {s.message}" for s in self.failures)
