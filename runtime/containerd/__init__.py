"""The containerd the kubelet can embed: its config files and its process."""

from runtime.containerd.config import ContainerdConfig
from runtime.containerd.embedded import EmbeddedContainerd, ReadinessCheck, cri_version_ready

__all__ = ["ContainerdConfig", "EmbeddedContainerd", "ReadinessCheck", "cri_version_ready"]
