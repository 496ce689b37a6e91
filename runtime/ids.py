"""Typed identifiers, so a pod UID is never passed where a container id is expected."""

from typing import NewType

PodUID = NewType("PodUID", str)
"""The pod's metadata.uid (for static pods, a hash of the manifest, node and source)."""

SandboxID = NewType("SandboxID", str)
"""The id the CRI runtime gave a pod sandbox."""

ContainerID = NewType("ContainerID", str)
"""The id the CRI runtime gave a container."""

ImageRef = NewType("ImageRef", str)
"""The runtime's reference of a pulled image (usually its digest or image id)."""
