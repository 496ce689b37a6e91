"""Making sure a container's image is there, by its pull policy (upstream imageManager)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from loguru import logger
from msgspec import Struct

from runtime.clock import Clock
from runtime.cri.service import ImageService
from runtime.cri.types import AuthConfig, Image, ImageSpec, PodSandboxConfig
from runtime.errors import CRIError, SyncError
from runtime.events import reasons
from runtime.events.recorder import NULL_RECORDER, EventRecorder, ObjectRef, container_ref
from runtime.events.v1 import go_duration, truncate_ms
from runtime.kuberuntime.backoff import Backoff, Observe, unobserved
from runtime.kuberuntime.object_source import ObjectSource
from runtime.kuberuntime.pull_secrets import pull_credentials
from runtime.pod.defaults import default_pull_policy  # the one rule manifests get too
from runtime.pod.model import Container, Pod

# A docker-style reference: [host[:port]/]path[:tag][@digest], lower-case path components.
_REFERENCE = re.compile(
    r"^(?:(?P<host>[a-zA-Z0-9.-]+(?::[0-9]+)?)/)?"
    r"(?P<path>[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$"
)


def is_valid_image_name(image: str) -> bool:
    return bool(image) and _REFERENCE.match(image) is not None


class PullKey(Struct, frozen=True):
    """What an image pull backs off per: the pod and the image, as upstream."""

    uid: str
    image: str


class ImageManager:
    """Pulls images by pull policy, with upstream's per pod+image pull back-off."""

    def __init__(self, images: ImageService, clock: Clock, observe: Observe = unobserved
                 ) -> None:
        self._images = images
        self._clock = clock
        self.backoff: Backoff[PullKey] = Backoff(clock, initial=10.0, maximum=300.0,
                                                 name="pull-backoff", observe=observe)
        # The API server's objects (cluster mode): imagePullSecrets' credentials.
        self.objects: ObjectSource | None = None
        self.events: EventRecorder = NULL_RECORDER  # set by KubeRuntimeManager

    def ensure_image(
        self, pod: Pod, container: Container, sandbox_config: PodSandboxConfig | None
    ) -> str:
        """Return the image reference to run, pulling it if the policy says so.

        Raises SyncError with upstream's reasons: InvalidImageName, ErrImageNeverPull,
        ImagePullBackOff (still backing off from an earlier failure) or ErrImagePull.
        """
        return self.ensure_image_status(pod, container, sandbox_config)[0]

    def ensure_image_status(
        self, pod: Pod, container: Container, sandbox_config: PodSandboxConfig | None,
        present_images: Mapping[str, Image] | None = None,
    ) -> tuple[str, Image | None]:
        """``ensure_image``, with the image's status when one was read on the way (the
        image was present, or its Pulled event asked for its size), so the caller need not
        ask the runtime again for the image's user (None: it must).

        ``present_images``: statuses already read in this sync (runtime.kuberuntime.
        image_checks, beside RunPodSandbox) of images found present; one of them is the
        answer to this check's ImageStatus, which is then not asked again."""
        image = container.image
        log = logger.bind(pod=pod.metadata.name, uid=pod.uid, container=container.name)
        ref = container_ref(pod, container)

        def event(type: str, reason: str, message: str) -> None:
            self.events.event(ref, type, reason, message)

        if not is_valid_image_name(image):
            message = f'Failed to apply default image tag "{image}"'
            event(reasons.WARNING, reasons.FAILED_TO_INSPECT_IMAGE, message)
            raise SyncError("InvalidImageName", message)
        policy = container.image_pull_policy or default_pull_policy(image)
        spec = ImageSpec(image=image)
        present = (present_images or {}).get(image)
        if present is None:
            present = self._images.image_status(spec)
        if present is not None and policy != "Always":
            event(reasons.NORMAL, reasons.PULLED_IMAGE,
                  f'Container image "{image}" already present on machine')
            return present.id, present
        if policy == "Never":
            message = f'Container image "{image}" is not present with pull policy of Never'
            event(reasons.WARNING, reasons.ERR_IMAGE_NEVER_PULL_POLICY, message)
            raise SyncError("ErrImageNeverPull", message)
        key = PullKey(pod.uid, image)
        now = self._clock.now()
        if self.backoff.in_backoff_since_update(key) > 0:
            message = f'Back-off pulling image "{image}"'
            event(reasons.NORMAL, reasons.BACK_OFF_PULL_IMAGE, message)
            raise SyncError("ImagePullBackOff", message, backoff=self.backoff.get(key))
        event(reasons.NORMAL, reasons.PULLING_IMAGE, f'Pulling image "{image}"')
        started = self._clock.monotonic()
        try:
            ref_id = self._pull(pod, spec, sandbox_config)
        except CRIError as err:
            self.backoff.next(key, now)
            log.warning("pulling image {} failed: {}", image, err.detail)
            message = f'Failed to pull image "{image}": {err.detail}'
            event(reasons.WARNING, reasons.FAILED_TO_PULL_IMAGE, message)
            raise SyncError("ErrImagePull", message) from err
        took = self._clock.monotonic() - started
        self.backoff.reset(key)
        self.backoff.gc()  # as upstream after a pull: drop the keys idle for 2x the maximum
        log.info("pulled image {} in {:.3f}s", image, took)
        return ref_id, self._pulled_event(ref, image, ref_id, took)

    def _pulled_event(self, ref: ObjectRef, image: str, image_ref: str, took: float
                      ) -> Image | None:
        """Pulled, with the image's size: upstream's puller asks the runtime for it
        (GetImageSize). Only when events go somewhere (run-once records none): the call
        is for the message. Pulls are not queued here, so the time waiting is the time
        pulling."""
        if self.events is NULL_RECORDER:
            return None
        pulled = self._images.image_status(ImageSpec(image_ref))
        size = pulled.size if pulled is not None else 0
        duration = go_duration(truncate_ms(took))
        self.events.event(ref, reasons.NORMAL, reasons.PULLED_IMAGE,
                          f'Successfully pulled image "{image}" in {duration} ({duration} '
                          f"including waiting). Image size: {size} bytes.")
        return pulled

    def _pull(self, pod: Pod, spec: ImageSpec, sandbox_config: PodSandboxConfig | None
              ) -> str:
        """Pull anonymously, or with each matching pull-secret credential in turn until
        one works (upstream pullImage); the last failure raises."""
        creds: list[AuthConfig | None] = [None]
        if self.objects is not None and pod.spec.image_pull_secrets:
            creds = list(pull_credentials(self.objects, pod, spec.image)) or [None]
        for auth in creds[:-1]:
            try:
                return self._images.pull_image(spec, auth, sandbox_config=sandbox_config)
            except CRIError:
                continue
        if creds[-1] is None:
            return self._images.pull_image(spec, sandbox_config=sandbox_config)
        return self._images.pull_image(spec, creds[-1], sandbox_config=sandbox_config)
