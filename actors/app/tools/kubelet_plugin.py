"""The kubelet's plug-in to the trace tools: what its messages say, wait for and concern.

Importing this module registers, with actors.app.tools.plugins.TOOLS, a one-line summary
for each kubelet message ``trace show`` and ``trace export`` print, the waits a pod
worker announces (its requeue, its containers' back-offs: spans in the Perfetto export)
and the pods each message concerns (``trace show --pod``). Every hook reads the typed
message; a back-off's delay is StepResult.backoff, never a number parsed from a message.

The internal messages (RunPending, KillFinished, Recheck, ProbeOutcome, ProbeQuery,
GetHealth, GetRunningPods, GetPods) have no summary of their own: the generic one, their
plain fields as key=value, says what they hold.
"""

from __future__ import annotations

from collections.abc import Iterator

import actors.kubelet.trace  # noqa: F401 - the kubelet's message names, old traces' included
from actors.app.tools.plugins import TOOLS, PodRef, Wait, clip
from actors.kubelet import names
from actors.kubelet.messages import (
    DesiredPods,
    KillRuntimePod,
    PodForgotten,
    PodObserved,
    PodRejected,
    PodWorkerDone,
    ProbeVerdict,
    Relisted,
    RelistFailed,
    RuntimeHealth,
    RuntimePodKilled,
    SourceSnapshot,
    UpdatePod,
)
from actors.kubelet.sources.file import FilesChanged
from runtime.kuberuntime.result import PodSyncResult
from runtime.pod.model import Pod

# --- summaries ----------------------------------------------------------------------------


def _name(pod: Pod) -> str:
    return pod.metadata.name or "?"


@TOOLS.summary(UpdatePod)
def _update_pod(message: UpdatePod) -> str:
    text = f"{message.kind.value} {_name(message.pod)}"
    if message.reason:
        text += f" ({message.reason})"
    if message.remove:
        text += " remove"
    return text


@TOOLS.summary(PodWorkerDone)
def _pod_worker_done(message: PodWorkerDone) -> str:
    text = message.state.value
    if message.requeue_after is not None:
        text += f" requeue {message.requeue_after:.1f}s"
    if message.error:
        text += f" error: {clip(message.error)}"
    if message.runtime_error:
        text += " (runtime error)"
    return text


@TOOLS.summary(Relisted)
def _relisted(message: Relisted) -> str:
    text = f"{len(message.events)} events, {len(message.pods)} pods"
    types = sorted({event.type.value for event in message.events})
    if types:
        text += f" [{', '.join(types)}]"
    return text


@TOOLS.summary(ProbeVerdict)
def _probe_verdict(message: ProbeVerdict) -> str:
    return (f"{message.kind.value} {message.result.value} "
            f"{message.container_name}").rstrip()


@TOOLS.summary(SourceSnapshot)
def _source_snapshot(message: SourceSnapshot) -> str:
    text = (f"{message.source}: {len(message.pods)} pods, "
            f"{len(message.problems)} problems")
    if message.warnings:
        text += f", {len(message.warnings)} warnings"
    return text


def _sync(sync: PodSyncResult | None) -> str:
    if sync is None:
        return "-"
    if not sync.failures:
        return f"ok ({len(sync.steps)} steps)"
    return "; ".join(f"{s.action} {s.target}: {s.error}" for s in sync.failures)


@TOOLS.summary(PodObserved)
def _pod_observed(message: PodObserved) -> str:
    return f"{_name(message.pod)} {message.state.value} sync {_sync(message.sync)}"


@TOOLS.summary(PodRejected)
def _pod_rejected(message: PodRejected) -> str:
    return f"{_name(message.pod)}: {message.reason}"


@TOOLS.summary(DesiredPods)
def _desired_pods(message: DesiredPods) -> str:
    return f"{len(message.pods)} pods"


@TOOLS.summary(PodForgotten)
def _pod_forgotten(message: PodForgotten) -> str:
    return str(message.uid)


@TOOLS.summary(KillRuntimePod)
def _kill_runtime_pod(message: KillRuntimePod) -> str:
    return f"{message.namespace}/{message.name} ({message.reason})"


@TOOLS.summary(RuntimePodKilled)
def _runtime_pod_killed(message: RuntimePodKilled) -> str:
    return "ok" if message.ok else f"failed: {clip(message.error)}"


@TOOLS.summary(RuntimeHealth)
def _runtime_health(message: RuntimeHealth) -> str:
    return "ok" if message.ok else f"down: {clip(message.reason)}"


@TOOLS.summary(RelistFailed)
def _relist_failed(message: RelistFailed) -> str:
    return clip(message.error)


@TOOLS.summary(FilesChanged)
def _files_changed(message: FilesChanged) -> str:
    return f"{len(message.paths)} paths"


# --- waits: what a pod worker waits for after a round -------------------------------------


@TOOLS.waits(PodWorkerDone)
def _requeue(message: PodWorkerDone) -> Iterator[Wait]:
    """The worker's next round comes ``requeue_after`` later: a back-off when it failed."""
    if message.requeue_after is None:
        return
    seconds = float(message.requeue_after)
    what = "back-off" if message.error else "requeue"
    yield Wait("back-off", seconds, f"{what} {seconds:.1f}s",
               {"state": message.state.value, "error": message.error})


@TOOLS.waits(PodObserved)
def _container_backoffs(message: PodObserved) -> Iterator[Wait]:
    """Each container the sync left waiting out a back-off (CrashLoopBackOff,
    ImagePullBackOff), for the delay its step carries."""
    for step in message.sync.steps if message.sync is not None else ():
        seconds = step.backoff_seconds
        if seconds is not None:
            yield Wait(f"back-off {step.target}", seconds,
                       f"{step.error} {step.target} {seconds:g}s", {"container": step.target})


# --- pods: which pods a message concerns --------------------------------------------------


def _pod(pod: Pod) -> Iterator[PodRef]:
    if pod.metadata.uid:
        yield PodRef(pod.metadata.name, pod.metadata.uid)


@TOOLS.pods(UpdatePod)
def _update_pod_pods(message: UpdatePod) -> Iterator[PodRef]:
    return _pod(message.pod)


@TOOLS.pods(PodObserved)
def _pod_observed_pods(message: PodObserved) -> Iterator[PodRef]:
    return _pod(message.pod)


@TOOLS.pods(PodRejected)
def _pod_rejected_pods(message: PodRejected) -> Iterator[PodRef]:
    return _pod(message.pod)


@TOOLS.pods(SourceSnapshot)
def _source_snapshot_pods(message: SourceSnapshot) -> Iterator[PodRef]:
    for pod in message.pods:
        yield from _pod(pod)


@TOOLS.pods(DesiredPods)
def _desired_pods_pods(message: DesiredPods) -> Iterator[PodRef]:
    for pod in message.pods:
        yield from _pod(pod)


@TOOLS.pods(Relisted)
def _relisted_pods(message: Relisted) -> Iterator[PodRef]:
    return (PodRef(pod.name, str(pod.uid)) for pod in message.pods if pod.uid)


@TOOLS.pods(KillRuntimePod)
def _kill_runtime_pod_pods(message: KillRuntimePod) -> Iterator[PodRef]:
    if message.uid:
        yield PodRef(message.name, str(message.uid))


def _pod_of(actor: str) -> str | None:
    return names.worker_uid(actor) if names.is_worker(actor) else None


TOOLS.pod_actors(_pod_of, names.worker_name)
