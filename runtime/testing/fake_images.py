"""The image half of the in-memory CRI fake: an image store behind ImageService.

``FakeImages`` keeps the images present (by id) and the images that a pull may fetch (by
reference). References without a tag or digest mean ``:latest``; ids are deterministic
(``image_id_for``). Pulling a reference that is neither present nor pullable fails the way
containerd does, with a CRIError whose message says "not found".
"""

from __future__ import annotations

import hashlib

from runtime.clock import Clock, FakeClock
from runtime.cri.types import AuthConfig, FilesystemUsage, Image, ImageSpec, PodSandboxConfig
from runtime.errors import CRIError
from runtime.testing.fake_calls import CallRecorder

IMAGE_FS_MOUNTPOINT = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs"
"""The mountpoint image_fs_info reports."""


def normalize_image_ref(ref: str) -> str:
    """``ref`` with ``:latest`` added when it names neither a tag nor a digest."""
    if "@" in ref or ":" in ref.rsplit("/", 1)[-1] or ref.startswith("sha256:"):
        return ref
    return f"{ref}:latest"


def image_id_for(ref: str) -> str:
    """The deterministic image id the fake gives ``ref``."""
    digest = hashlib.sha256(normalize_image_ref(ref).encode()).hexdigest()
    return f"sha256:{digest}"


class FakeImages(CallRecorder):
    """ImageService in memory, with hooks to stock the store; see FakeRuntime."""

    def __init__(self, clock: Clock | None = None) -> None:
        super().__init__()
        self.clock: Clock = clock if clock is not None else FakeClock()
        self._images: dict[str, Image] = {}  # by id
        self._pullable: dict[str, Image] = {}  # by normalized ref
        # Where image_fs_info says the images are (a test of image GC points it at a real
        # directory, whose filesystem's size and free space the collector reads).
        self.image_fs_mountpoint = IMAGE_FS_MOUNTPOINT

    def add_image(self, ref: str, *, size: int = 1_000_000) -> Image:
        """Put ``ref`` in the image store (as if pulled); returns the Image."""
        with self._lock:
            image = self._image_for(ref, size)
            self._images[image.id] = image
            return image

    def make_pullable(self, ref: str, *, size: int = 1_000_000) -> None:
        """Let ``pull_image(ref)`` succeed (the image is not present until pulled)."""
        with self._lock:
            self._pullable[normalize_image_ref(ref)] = self._image_for(ref, size)

    def has_image(self, ref: str) -> bool:
        """Whether the image store holds ``ref`` (a tag, digest or id)."""
        with self._lock:
            return self._find_image(ref) is not None

    # --- internals -----------------------------------------------------------------------

    @staticmethod
    def _image_for(ref: str, size: int) -> Image:
        return Image(id=image_id_for(ref), repo_tags=(normalize_image_ref(ref),), size=size)

    def _find_image(self, ref: str) -> Image | None:
        if ref in self._images:
            return self._images[ref]
        norm = normalize_image_ref(ref)
        for image in self._images.values():
            if norm in image.repo_tags or ref in image.repo_digests:
                return image
        return None

    # --- ImageService --------------------------------------------------------------------

    def image_status(self, image: ImageSpec) -> Image | None:
        with self._lock:
            self._enter("image_status", image)
            return self._find_image(image.image)

    def pull_image(
        self,
        image: ImageSpec,
        auth: AuthConfig | None = None,
        sandbox_config: PodSandboxConfig | None = None,
    ) -> str:
        with self._lock:
            self._enter("pull_image", image, auth, sandbox_config)
            ref = image.image
            pullable = self._pullable.get(normalize_image_ref(ref))
            if pullable is not None:
                self._images[pullable.id] = pullable
                return pullable.id
            found = self._find_image(ref)
            if found is not None:
                return found.id
            raise CRIError(
                "PullImage",
                f"failed to pull and unpack image {ref!r}: failed to resolve reference "
                f"{ref!r}: {ref}: not found",
                "UNKNOWN",
            )

    def list_images(self, filter: ImageSpec | None = None) -> tuple[Image, ...]:
        with self._lock:
            self._enter("list_images", filter)
            if filter is None or not filter.image:
                return tuple(self._images.values())
            found = self._find_image(filter.image)
            return (found,) if found is not None else ()

    def remove_image(self, image: ImageSpec) -> None:
        with self._lock:
            self._enter("remove_image", image)
            found = self._find_image(image.image)
            if found is not None:
                del self._images[found.id]

    def image_fs_info(self) -> tuple[FilesystemUsage, ...]:
        with self._lock:
            self._enter("image_fs_info")
            return (
                FilesystemUsage(
                    mountpoint=self.image_fs_mountpoint,
                    used_bytes=sum(i.size for i in self._images.values()),
                    inodes_used=len(self._images),
                    timestamp=self.clock.now(),
                ),
            )
