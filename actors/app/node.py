"""This machine as the kubelet's admission sees it."""

from __future__ import annotations

from actors.app.flags import KubeletFlags
from runtime.machine import machine_allocatable, machine_arch
from runtime.pod.admission import Node, node_labels


def this_node(flags: KubeletFlags) -> Node:
    """This machine as admission sees it, read once at start: its name, its labels
    (kubernetes.io/hostname, os and arch, plus --node-labels) and its allocatable
    resources (runtime.machine)."""
    return Node(
        name=flags.node_name,
        labels=node_labels(flags.node_name, "linux", machine_arch(), dict(flags.node_labels)),
        allocatable=machine_allocatable(flags.root_dir, flags.max_pods),
    )
