"""Cgroup names of the kubepods hierarchy and their spelling per cgroup driver
(upstream pkg/kubelet/cm/cgroup_manager_linux.go CgroupName, ToCgroupfs, ToSystemd,
qos_container_manager_linux.go and pod_container_manager_linux.go GetPodContainerName).

A name is a tuple of components below the root: ("kubepods", "burstable", "pod<uid>").
cgroupfs spells it as a path, "/kubepods/burstable/pod<uid>"; systemd as nested slices,
"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice". Either
spelling is what the runtime gets as the sandbox's cgroup parent.
"""

from __future__ import annotations

from typing import Final

from runtime.cm.qos import BEST_EFFORT, BURSTABLE, GUARANTEED, pod_qos
from runtime.pod.model import Pod

CGROUPFS: Final = "cgroupfs"
SYSTEMD: Final = "systemd"
DRIVERS: Final = (CGROUPFS, SYSTEMD)
KUBEPODS: Final = "kubepods"
POD_PREFIX: Final = "pod"

CgroupName = tuple[str, ...]


def parse_cgroupfs(path: str) -> CgroupName:
    """"/a/b" -> ("a", "b"); "/" -> ()."""
    return tuple(part for part in path.split("/") if part)


def parse_systemd(slice_path: str) -> CgroupName:
    """The components of a systemd slice path or leaf: "a-b.slice" -> ("a", "b");
    an escaped "_" in a component is read back as "-"."""
    leaf = slice_path.rstrip("/").rsplit("/", 1)[-1]
    if leaf in ("", "-.slice"):
        return ()
    if not leaf.endswith(".slice"):
        raise ValueError(f'"{slice_path}" is not a systemd slice')
    parts = leaf[: -len(".slice")].split("-")
    return tuple(p.replace("_", "-") for p in parts)


def parse_root(cgroup_root: str, driver: str) -> CgroupName:
    """--cgroup-root as a name: a path for cgroupfs, a slice (or "/") for systemd."""
    if driver == SYSTEMD and cgroup_root not in ("", "/"):
        return parse_systemd(cgroup_root)
    return parse_cgroupfs(cgroup_root)


def to_cgroupfs(name: CgroupName) -> str:
    return "/" + "/".join(name)


def _escape_systemd(part: str) -> str:
    return part.replace("-", "_")


def to_systemd(name: CgroupName) -> str:
    """The slice path: each level's slice is named by all components up to it."""
    if not name:
        return "/"
    escaped = [_escape_systemd(p) for p in name]
    slices = ["-".join(escaped[: i + 1]) + ".slice" for i in range(len(escaped))]
    return "/" + "/".join(slices)


def driver_name(name: CgroupName, driver: str) -> str:
    """The name the kubelet gives the runtime (cgroupManager.Name) and the directory
    below each controller's mount: the cgroupfs path, or the systemd slice path (runc's
    systemd driver takes its last slice)."""
    return to_systemd(name) if driver == SYSTEMD else to_cgroupfs(name)


fs_path = driver_name


def kubepods(root: CgroupName) -> CgroupName:
    return (*root, KUBEPODS)


def qos_cgroup(root: CgroupName, qos: str) -> CgroupName:
    """Guaranteed pods live right under kubepods; the others in burstable, besteffort."""
    base = kubepods(root)
    if qos == GUARANTEED:
        return base
    if qos in (BURSTABLE, BEST_EFFORT):
        return (*base, qos.lower())
    raise ValueError(f"unknown QoS class {qos!r}")


def pod_cgroup(root: CgroupName, qos: str, uid: str) -> CgroupName:
    return (*qos_cgroup(root, qos), POD_PREFIX + uid)


def pod_uid_of(component: str) -> str | None:
    """The pod UID of a "pod<uid>" component (a systemd one has "_" for "-")."""
    if not component.startswith(POD_PREFIX) or len(component) <= len(POD_PREFIX):
        return None
    return component[len(POD_PREFIX):]


def pod_cgroup_parent(pod: Pod, cgroup_root: str, driver: str) -> str:
    """What a pod's sandbox gets as cgroup parent with cgroupsPerQOS on."""
    return driver_name(pod_cgroup(parse_root(cgroup_root, driver), pod_qos(pod), pod.uid),
                       driver)
