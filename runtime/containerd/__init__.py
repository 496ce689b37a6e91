"""The containerd the kubelet can embed: its config files and its process.

The names below are loaded on first use (PEP 562): importing a submodule such as
``runtime.containerd.events`` must not pay for the embedded containerd's code, which a
daemon given ``--container-runtime-endpoint`` never runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.containerd.config import ContainerdConfig
    from runtime.containerd.embedded import (
        EmbeddedContainerd,
        ReadinessCheck,
        cri_version_ready,
    )

__all__ = ["ContainerdConfig", "EmbeddedContainerd", "ReadinessCheck", "cri_version_ready"]

_HOMES = {"ContainerdConfig": "runtime.containerd.config",
          "EmbeddedContainerd": "runtime.containerd.embedded",
          "ReadinessCheck": "runtime.containerd.embedded",
          "cri_version_ready": "runtime.containerd.embedded"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
