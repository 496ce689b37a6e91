"""The test bed: what the e2e tests, the drills and the benchmarks run on, in the product.

The machine-wide lock, the loopback registry with the pause and busybox images (built by
images.sh from pause.c, both shipped beside this file), private embedded containerds in
fresh /var/tmp dirs, and the cleanup of everything such a containerd made. The drills run
from an installed wheel, so none of it may live in tests/ or bench/.
"""

from actors.app.testbed.beds import (
    BENCH,
    BENCH_WIDE,
    DIR_PARENT,
    DRILLS,
    E2E,
    MAX_SLOTS,
    SOAK,
    Bed,
    TestbedError,
)
from actors.app.testbed.cgroup_root import cgroup_root_of, own_cgroup_root
from actors.app.testbed.cleanup import cleanup_runtime_dir, mounts_under, shims_for
from actors.app.testbed.containerd import new_embedded, private_containerd
from actors.app.testbed.lock import LOCK_PATH, LOCK_WAIT_S, HeldLock, machine_lock
from actors.app.testbed.registry import (
    BUSYBOX_IMAGE,
    BUSYBOX_NONROOT_IMAGE,
    PAUSE_IMAGE,
    REGISTRY_ADDR,
    Registry,
    serve_images,
)

__all__ = [
    "BENCH",
    "BENCH_WIDE",
    "BUSYBOX_IMAGE",
    "BUSYBOX_NONROOT_IMAGE",
    "DIR_PARENT",
    "DRILLS",
    "E2E",
    "LOCK_PATH",
    "LOCK_WAIT_S",
    "MAX_SLOTS",
    "PAUSE_IMAGE",
    "REGISTRY_ADDR",
    "SOAK",
    "Bed",
    "HeldLock",
    "Registry",
    "TestbedError",
    "cgroup_root_of",
    "cleanup_runtime_dir",
    "machine_lock",
    "mounts_under",
    "new_embedded",
    "own_cgroup_root",
    "private_containerd",
    "serve_images",
    "shims_for",
]
