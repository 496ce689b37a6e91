"""Garbage collection's dealings with the runtime and the disk: what it reads, what it removes.

``gather`` reads what the planners (container_gc, image_gc) need, as frozen values; ``carry
out`` removes what a plan says, logging each removal with its pod, UID and container, and
reports what went and what failed. Both run on the collector's own thread, never an actor's.
"""

from __future__ import annotations

import os
import shutil

from loguru import logger
from msgspec import Struct

from runtime.cri.service import CRIRuntime
from runtime.cri.types import Container as CRIContainer
from runtime.cri.types import ContainerState, ImageSpec, SandboxState
from runtime.errors import CRIError, CRINotFound, LogRotationError
from runtime.host_counters import statfs
from runtime.ids import PodUID
from runtime.kuberuntime import labels as L
from runtime.kuberuntime.container_gc import (
    ContainerGCPlan,
    ContainerRemoval,
    GCContainer,
    GCSandbox,
    GCState,
    SandboxRemoval,
    pod_uid_of_log_dir,
)
from runtime.kuberuntime.image_gc import GCImage, ImageFs, ImageGCPlan, ImageRemoval
from runtime.kuberuntime.log_rotator import clean_container_logs

_STATES = {ContainerState.CREATED: GCState.CREATED, ContainerState.RUNNING: GCState.RUNNING,
           ContainerState.EXITED: GCState.EXITED, ContainerState.UNKNOWN: GCState.UNKNOWN}


class GCInputs(Struct, frozen=True):
    """One reading of the runtime (and the pod logs directory) for a GC round."""

    containers: tuple[GCContainer, ...] = ()
    sandboxes: tuple[GCSandbox, ...] = ()
    log_dirs: tuple[str, ...] = ()
    images: tuple[GCImage, ...] = ()
    images_in_use: tuple[str, ...] = ()  # what every container names its image by
    image_fs: ImageFs | None = None
    error: str = ""  # the reading failed: nothing else here is to be trusted


class GCOutcome(Struct, frozen=True):
    """What carrying out a plan removed, and what it could not."""

    containers: tuple[ContainerRemoval, ...] = ()
    sandboxes: tuple[SandboxRemoval, ...] = ()
    log_dirs: tuple[str, ...] = ()
    images: tuple[ImageRemoval, ...] = ()
    errors: tuple[str, ...] = ()

    @property
    def bytes_freed(self) -> int:
        return sum(i.size for i in self.images)


def _container(c: CRIContainer) -> GCContainer | None:
    uid = c.labels.get(L.POD_UID)
    if not uid:
        return None  # not the kubelet's
    return GCContainer(c.id, c.pod_sandbox_id, PodUID(uid), c.labels.get(L.POD_NAME, ""),
                       c.labels.get(L.POD_NAMESPACE, ""),
                       c.labels.get(L.CONTAINER_NAME, c.metadata.name),
                       _STATES.get(c.state, GCState.UNKNOWN), c.created_at)


def gather(runtime: CRIRuntime, pod_logs_dir: str, containers: bool, images: bool) -> GCInputs:
    """What a round needs: the kubelet's containers, sandboxes and pod log directories
    (``containers``), the images, the images in use and the image filesystem (``images``)."""
    try:
        listed = runtime.list_containers()
        kubelet_containers = tuple(g for c in listed if (g := _container(c)) is not None)
        in_use = tuple(sorted({n for c in listed for n in (c.image.image, c.image_ref) if n}))
        sandboxes: tuple[GCSandbox, ...] = ()
        log_dirs: tuple[str, ...] = ()
        if containers:
            sandboxes = tuple(
                GCSandbox(s.id, PodUID(s.metadata.uid), s.metadata.name, s.metadata.namespace,
                          s.state == SandboxState.READY, s.created_at)
                for s in runtime.list_pod_sandbox() if s.labels.get(L.POD_UID))
            try:
                log_dirs = tuple(sorted(d for d in os.listdir(pod_logs_dir)
                                        if os.path.isdir(os.path.join(pod_logs_dir, d))))
            except FileNotFoundError:
                log_dirs = ()
        found: tuple[GCImage, ...] = ()
        fs: ImageFs | None = None
        if images:
            found = tuple(GCImage(i.id, (*i.repo_tags, *i.repo_digests), i.size, i.pinned)
                          for i in runtime.list_images())
            usage = next(iter(runtime.image_fs_info()), None)
            sample = statfs(usage.mountpoint) if usage is not None else None
            if sample is not None:
                fs = ImageFs(sample.capacity, sample.available)
        return GCInputs(kubelet_containers if containers else (), sandboxes, log_dirs, found,
                        in_use, fs)
    except (CRIError, OSError) as err:
        return GCInputs(error=f"reading the runtime failed: {err}")


def _remove_container(runtime: CRIRuntime, removal: ContainerRemoval) -> None:
    """Upstream's removeContainer: stop it if its state is unknown, remove it, then its
    log and the files rotation made of it (the runtime reports where the log is): left
    behind, the rotated files of every instance a long-lived pod's container has had
    would pile up until the pod is deleted."""
    c = removal.container
    log_path = ""
    try:
        log_path = runtime.container_status(c.id).log_path
    except CRINotFound:
        return
    if c.state == GCState.UNKNOWN:
        runtime.stop_container(c.id, 0)
    runtime.remove_container(c.id)
    clean_container_logs(log_path)


def carry_out(runtime: CRIRuntime, pod_logs_dir: str, containers: ContainerGCPlan | None,
              images: ImageGCPlan | None) -> GCOutcome:
    """Remove what the plans say, in order; a failure is reported and the rest goes on."""
    done_c: list[ContainerRemoval] = []
    done_s: list[SandboxRemoval] = []
    done_d: list[str] = []
    done_i: list[ImageRemoval] = []
    errors: list[str] = []
    plan = containers or ContainerGCPlan()
    for removal in plan.containers:
        c = removal.container
        log = logger.bind(pod=c.pod_name, uid=c.pod_uid, container=c.name)
        try:
            _remove_container(runtime, removal)
            done_c.append(removal)
            log.info("garbage collected container {} ({})", c.id[:13], removal.reason.value)
        except (CRIError, LogRotationError) as err:
            errors.append(f"failed to remove container {c.id[:13]}: {err}")
            log.warning("removing dead container {} failed: {}", c.id[:13], err)
    for sandbox_removal in plan.sandboxes:
        s = sandbox_removal.sandbox
        log = logger.bind(pod=s.pod_name, uid=s.pod_uid, container="")
        try:
            runtime.stop_pod_sandbox(s.id)
            runtime.remove_pod_sandbox(s.id)
            done_s.append(sandbox_removal)
            log.info("garbage collected sandbox {} ({})", s.id[:13],
                     sandbox_removal.reason.value)
        except CRINotFound:
            continue
        except CRIError as err:
            errors.append(f"failed to remove sandbox {s.id[:13]}: {err}")
            log.warning("removing sandbox {} failed: {}", s.id[:13], err)
    for name in plan.log_dirs:
        log = logger.bind(pod=name.rsplit("_", 1)[0], uid=pod_uid_of_log_dir(name),
                          container="")
        try:
            shutil.rmtree(os.path.join(pod_logs_dir, name))
            done_d.append(name)
            log.info("removed the log directory of a removed pod: {}", name)
        except FileNotFoundError:
            continue
        except OSError as err:
            errors.append(f"failed to remove pod logs directory {name}: {err}")
            log.warning("removing pod logs directory {} failed: {}", name, err)
    for image in (images.removals if images is not None else ()):
        log = logger.bind(pod="", uid="", container="")
        try:
            runtime.remove_image(ImageSpec(image.image_id))
            done_i.append(image)
            log.info("garbage collected image {} {} ({} bytes, {})", image.image_id[:19],
                     ",".join(image.names[:1]), image.size, image.reason.value)
        except CRINotFound:
            continue
        except CRIError as err:
            errors.append(f"failed to remove image {image.image_id}: {err}")
            log.warning("removing image {} failed: {}", image.image_id, err)
    return GCOutcome(tuple(done_c), tuple(done_s), tuple(done_d), tuple(done_i), tuple(errors))
