"""The garbage collector's settings: its policies and periods.

Apart from the collector (actors.kubelet.garbage_collector) so that reading the flags,
which makes them, does not load the actor and what it runs.
"""

from __future__ import annotations

from msgspec import Struct, field

from runtime.kuberuntime.container_gc import ContainerGCPolicy
from runtime.kuberuntime.image_gc import ImageGCPolicy

CONTAINER_GC_PERIOD = 60.0
"""Upstream's ContainerGCPeriod (1 m)."""
IMAGE_GC_PERIOD = 300.0
"""Upstream's ImageGCPeriod (5 m)."""


class GCSettings(Struct, frozen=True):
    """The collector's policies and periods (the periods are this project's flags)."""

    containers: ContainerGCPolicy = field(default_factory=ContainerGCPolicy)
    images: ImageGCPolicy = field(default_factory=ImageGCPolicy)
    container_gc_period: float = CONTAINER_GC_PERIOD
    image_gc_period: float = IMAGE_GC_PERIOD
    # The sandbox (pause) image counts as in use whether or not a sandbox runs: upstream
    # did so before runtimes reported it pinned, which containerd 1.6 does not.
    sandbox_image: str = ""
