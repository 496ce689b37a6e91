"""Container images' statuses asked for while the pod's sandbox is being created.

Upstream's SyncPod creates the sandbox, then starts each container, and each start first
asks the runtime for its image's status (EnsureImageExists). That answer does not depend
on the sandbox, and RunPodSandbox is the slowest call of a start (a network namespace,
the pause container's shim), so this kubelet asks for the images' statuses on a thread
beside it; each container start then takes the answer instead of asking again.

Only the question moves. Whatever the answer decides still happens in the container
start, after the sandbox exists, in upstream's order: the pull policy, a pull and its
back-off, the Pulling/Pulled events, CreateContainer. An answer that the image is absent
is not used (a container started before may have pulled it: the start asks again), nor
is a check that failed (the start asks again and reports the error as it always did).

``images_to_check`` is the plan (pure); ``beside_sandbox.beside`` carries it out.
"""

from __future__ import annotations

from collections.abc import Mapping

from runtime.cri.service import ImageService
from runtime.cri.types import Image, ImageSpec
from runtime.errors import CRIError
from runtime.kuberuntime.actions import PodActions
from runtime.kuberuntime.ephemeral import as_container
from runtime.kuberuntime.images import is_valid_image_name
from runtime.pod.model import Container, Pod

PresentImages = Mapping[str, Image]
"""The images found present by the checks, by the name the pod spec gives."""

NO_IMAGES: PresentImages = {}


def images_to_check(pod: Pod, plan: PodActions) -> tuple[str, ...]:
    """The images whose status to ask for beside RunPodSandbox: those of the containers
    this plan starts, in the order it starts them, each once; none when the plan makes
    no sandbox (nothing to overlap) and no name the image check would reject."""
    if not plan.create_sandbox:
        return ()
    starting: list[Container] = [
        *(as_container(pod.spec.ephemeral_containers[i])
          for i in plan.ephemeral_containers_to_start),
        *(pod.spec.init_containers[i] for i in plan.init_containers_to_start),
        *(pod.spec.containers[i] for i in plan.containers_to_start),
    ]
    images: list[str] = []
    for container in starting:
        if is_valid_image_name(container.image) and container.image not in images:
            images.append(container.image)
    return tuple(images)


def check_images(runtime: ImageService, images: tuple[str, ...]) -> PresentImages:
    """Ask for each image's status in turn; the ones present, by name. A failed check
    leaves its image out: the container start asks again."""
    present: dict[str, Image] = {}
    for image in images:
        try:
            status = runtime.image_status(ImageSpec(image=image))
        except CRIError:
            continue
        if status is not None:
            present[image] = status
    return present
