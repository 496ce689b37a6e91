"""Making sure a container's image is there, by its pull policy (upstream imageManager)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from loguru import logger

from runtime.clock import Clock
from runtime.cri.service import ImageService
from runtime.cri.types import AuthConfig, ImageSpec, PodSandboxConfig
from runtime.errors import CRIError, SyncError
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


@dataclass(frozen=True, slots=True)
class PullKey:
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

    def ensure_image(
        self, pod: Pod, container: Container, sandbox_config: PodSandboxConfig | None
    ) -> str:
        """Return the image reference to run, pulling it if the policy says so.

        Raises SyncError with upstream's reasons: InvalidImageName, ErrImageNeverPull,
        ImagePullBackOff (still backing off from an earlier failure) or ErrImagePull.
        """
        image = container.image
        log = logger.bind(pod=pod.metadata.name, uid=pod.uid, container=container.name)
        if not is_valid_image_name(image):
            raise SyncError("InvalidImageName", f'Failed to apply default image tag "{image}"')
        policy = container.image_pull_policy or default_pull_policy(image)
        spec = ImageSpec(image=image)
        present = self._images.image_status(spec)
        if present is not None and policy != "Always":
            return present.id
        if policy == "Never":
            raise SyncError(
                "ErrImageNeverPull",
                f'Container image "{image}" is not present with pull policy of Never',
            )
        key = PullKey(pod.uid, image)
        now = self._clock.now()
        if self.backoff.in_backoff_since_update(key) > 0:
            raise SyncError("ImagePullBackOff", f'Back-off pulling image "{image}"',
                            backoff=self.backoff.get(key))
        started = self._clock.monotonic()
        try:
            ref = self._pull(pod, spec, sandbox_config)
        except CRIError as err:
            self.backoff.next(key, now)
            log.warning("pulling image {} failed: {}", image, err.detail)
            raise SyncError(
                "ErrImagePull", f'Failed to pull image "{image}": {err.detail}'
            ) from err
        self.backoff.reset(key)
        self.backoff.gc()  # as upstream after a pull: drop the keys idle for 2x the maximum
        log.info("pulled image {} in {:.3f}s", image, self._clock.monotonic() - started)
        return ref

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
