"""The pods' network flags: ``--pod-cidr`` (standalone; in cluster mode the Node's
spec.podCIDRs) and the embedded containerd's CNI settings, ``--cni-bin-dir``,
``--cni-conf-dir`` and ``--cni-bridge-name``, with the CNI directories' check."""

from __future__ import annotations

import os
from collections.abc import Callable

from runtime.errors import ConfigError


def add_network_flags(add: Callable[..., None]) -> None:
    """The flags, on build_parser's ``add``."""
    add("--pod-cidr", default="",
        help="the CIDR to use for pod IP addresses, only used in standalone mode (in "
             "cluster mode, this is obtained from the control plane: the Node's "
             "spec.podCIDRs); given to the runtime at start; the embedded containerd's "
             "pods get addresses from it (default 10.88.0.0/16 there)")
    add("--cni-bin-dir", default="",
        help="embedded containerd: the absolute directory of the CNI plugins (default "
             "/usr/lib/cni)")
    add("--cni-conf-dir", default="",
        help="embedded containerd: the absolute directory it loads CNI network configs "
             "from, the operator's (the kubelet writes none there); default its own "
             "<root-dir>/containerd/cni/net.d, with the kubelet's bridge network")
    add("--cni-bridge-name", default="kacni0",
        help="embedded containerd: the Linux bridge its pods attach to")


def check_cni_dir(flag: str, directory: str, endpoint: str) -> None:
    """--cni-bin-dir and --cni-conf-dir: for the embedded containerd only, an absolute
    path to a directory that exists."""
    if not directory:
        return
    if endpoint:
        raise ConfigError(f'{flag} "{directory}": only the embedded containerd takes it; '
                          f'the runtime at --container-runtime-endpoint "{endpoint}" reads '
                          "its own CNI configuration")
    if not os.path.isabs(directory):
        raise ConfigError(f'{flag} "{directory}": must be an absolute path')
    if not os.path.isdir(directory):
        raise ConfigError(f'{flag} "{directory}": no such directory')
