"""Private embedded containerds for the test bed's users, on their own bridge and subnet."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from actors.app.testbed.beds import Bed, TestbedError
from actors.app.testbed.cleanup import cleanup_runtime_dir
from actors.app.testbed.registry import PAUSE_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd, ReadinessCheck
from runtime.errors import ContainerdError

START_TIMEOUT_S = 30.0


def new_embedded(base_dir: Path, bridge: str, subnet: str,
                 readiness: ReadinessCheck | None = None) -> EmbeddedContainerd:
    """An EmbeddedContainerd on ``base_dir`` with the bed's sandbox image (not started)."""
    return EmbeddedContainerd(base_dir, sandbox_image=PAUSE_IMAGE, bridge_name=bridge,
                              subnet=subnet, readiness=readiness,
                              start_timeout=START_TIMEOUT_S)


@contextlib.contextmanager
def private_containerd(bed: Bed) -> Iterator[EmbeddedContainerd]:
    """A running containerd in a fresh dir of ``bed``'s; everything it made goes at the end.

    Take it under the machine-wide lock, with the images served.
    """
    base = bed.new_dir()
    emb = new_embedded(base, bed.bridge, bed.subnet)
    try:
        emb.start()
    except ContainerdError as err:
        cleanup_runtime_dir(base, bed.bridge, emb)
        raise TestbedError(f"the {bed.user} containerd in {base} did not start: {err}") from err
    try:
        yield emb
    finally:
        cleanup_runtime_dir(base, bed.bridge, emb)
