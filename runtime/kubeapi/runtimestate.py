"""What the runtime tells the Node, as upstream's kubelet reads it: pure functions.

- The image list (pkg/kubelet/images: the image GC manager's cache, refreshed from CRI
  ListImages every 30 s and kept sorted by sliceutils.ByImageSize) for the Images setter.
- The runtime's conditions (kubelet.go updateRuntimeUp): NetworkReady false or absent is
  the Ready condition's network error, RuntimeReady false or absent its runtime error,
  each worded with kubecontainer.RuntimeCondition's String().
- The fast status update at startup (kubelet.go fastNodeStatusUpdate, 1.27+): until the
  Node is Ready, every 100 ms for at most nodeReadyGracePeriod, the status is recomputed
  from the Node last seen (no API read) and posted the moment it turns Ready.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

from runtime.cri.conditions import condition_errors
from runtime.cri.types import Image
from runtime.kubeapi.nodestatus import NodeImage

__all__ = ["FAST_STATUS_PERIOD", "IMAGE_CACHE_PERIOD", "NODE_READY_GRACE_PERIOD",
           "FastStep", "condition_errors", "fast_status_step", "node_images", "ready_status"]

IMAGE_CACHE_PERIOD = 30.0
"""realImageGCManager.Start: the image cache is refreshed from ListImages this often."""
FAST_STATUS_PERIOD = 0.1
"""fastStatusUpdateOnce: wait.Until(..., 100*time.Millisecond, ...)."""
NODE_READY_GRACE_PERIOD = 120.0
"""nodeReadyGracePeriod: the fast updates stop after this long, Ready or not."""


def node_images(images: Iterable[Image]) -> tuple[NodeImage, ...]:
    """The runtime's images as the image cache holds them: biggest first, equal sizes by
    ID descending (ByImageSize); names are the repo digests then the repo tags (the
    Images setter's order)."""
    ordered = sorted(images, key=lambda i: (i.size, i.id), reverse=True)
    return tuple(NodeImage(names=(*i.repo_digests, *i.repo_tags), size_bytes=i.size, id=i.id)
                 for i in ordered)


def ready_status(node: Mapping[str, Any] | None) -> str | None:
    """The Node's Ready condition status ("True", "False", "Unknown"), None without one."""
    if not node:
        return None
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return str(condition.get("status"))
    return None


class FastStep(enum.Enum):
    """What one fast status round decides."""

    DONE = "done"
    """Stop the fast updates: the Node is Ready (or the grace period passed)."""
    AGAIN = "again"
    """Nothing to post yet: try again in 100 ms."""
    PATCH = "patch"
    """Post the recomputed status (it just turned Ready), then stop."""


def fast_status_step(seen: Mapping[str, Any] | None, updated: Mapping[str, Any] | None,
                     changed: bool, timed_out: bool) -> FastStep:
    """fastNodeStatusUpdate's decision. ``seen`` is the Node last read or written (the
    lister's copy; None before registration), ``updated`` the status recomputed from it,
    ``changed`` whether that differs from ``seen`` (nodeStatusHasChanged)."""
    if timed_out:
        return FastStep.DONE
    if seen is None or ready_status(seen) is None:
        return FastStep.AGAIN
    if ready_status(seen) == "True":
        return FastStep.DONE
    if not changed or ready_status(updated) in (None, "False"):
        return FastStep.AGAIN
    return FastStep.PATCH
