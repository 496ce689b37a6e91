"""The node's IP address: what upstream's kubelet reports as status.hostIP(s) of its pods,
gives to the downward API's ``status.hostIP`` and, for host-network pods, uses as the pod
IP.

Upstream's NodeAddress setter (pkg/kubelet/nodestatus/setters.go), with no cloud provider,
picks in this order: ``--node-ip`` when given (and not 0.0.0.0 or ::); the node name when it
is itself an IP; the first address the node name resolves to that is a valid node IP
(IPv4 first); else the address of the interface that holds the default route (k8s.io
utils' ChooseHostInterface). A valid node IP is not loopback, link-local, multicast or
unspecified, and is on one of the node's interfaces. ``choose_node_ip`` is that decision as
a pure function; ``node_ip`` reads the machine for it.
"""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct
from collections.abc import Iterable, Sequence

from runtime.errors import ConfigError

__all__ = ["check_node_ip", "choose_node_ip", "default_route_ipv4", "interface_ips",
           "node_ip", "valid_node_ip"]

_SIOCGIFADDR = 0x8915


def valid_node_ip(address: str, local: Iterable[str]) -> bool:
    """upstream validateNodeIP: usable as the node's address, and one of ``local``."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_unspecified:
        return False
    return any(ipaddress.ip_address(a) == ip for a in local)


def check_node_ip(flag: str, local: Iterable[str]) -> str:
    """``--node-ip`` as upstream's validateNodeIP checks a given one (0.0.0.0 and :: mean
    "choose", and are not checked): an IP address, not loopback, multicast, link-local or
    all zeros, and one of this host's addresses (``local``); ConfigError in upstream's
    words otherwise. The address in canonical form."""
    try:
        ip = ipaddress.ip_address(flag)
    except ValueError as err:
        raise ConfigError(f"--node-ip {flag}: nodeIP must be a valid IP address") from err
    for bad, why in ((ip.is_loopback, "loopback"), (ip.is_multicast, "a multicast"),
                     (ip.is_link_local, "a link-local unicast")):
        if bad:
            raise ConfigError(f"--node-ip {flag}: nodeIP can't be {why} address")
    if not any(ipaddress.ip_address(a) == ip for a in local):
        raise ConfigError(f'--node-ip {flag}: node IP: "{ip}" not found in the host\'s '
                          "network interfaces")
    return str(ip)


def choose_node_ip(flag: str, node_name: str, resolved: Sequence[str],
                   local: Sequence[str], default_route: str) -> str:
    """The node's primary IP by upstream's order (see the module's docstring); "" when
    nothing fits. ``resolved``: what the node name resolves to; ``local``: the addresses
    of the node's interfaces; ``default_route``: the address of the default route's
    interface ("" if none)."""
    if flag and not ipaddress.ip_address(flag).is_unspecified:
        return flag
    try:
        return str(ipaddress.ip_address(node_name))
    except ValueError:
        pass
    candidates = [a for a in resolved if valid_node_ip(a, local)]
    prefer_v6 = bool(flag) and ipaddress.ip_address(flag).version == 6
    for wanted in ((6, 4) if prefer_v6 else (4, 6)):
        for address in candidates:
            if ipaddress.ip_address(address).version == wanted:
                return address
    return default_route


def _ipv4_of(interface: str) -> str:
    """The primary IPv4 address of ``interface`` (SIOCGIFADDR), "" when it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            packed = fcntl.ioctl(s.fileno(), _SIOCGIFADDR,
                                 struct.pack("256s", interface.encode()[:15]))
        except OSError:
            return ""
    return socket.inet_ntoa(packed[20:24])


def default_route_ipv4(route_table: str = "/proc/net/route") -> str:
    """The IPv4 address of the interface holding the default route (ChooseHostInterface
    reads the same table), "" when there is none."""
    try:
        with open(route_table, encoding="ascii") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return ""
    for line in lines:
        fields = line.split()
        # Iface Destination Gateway Flags ...: destination 0 with the gateway flag (0x2).
        if len(fields) > 3 and fields[1] == "00000000" and int(fields[3], 16) & 0x2:
            address = _ipv4_of(fields[0])
            if address and valid_node_ip(address, (address,)):
                return address
    return ""


def interface_ips(if_inet6: str = "/proc/net/if_inet6") -> tuple[str, ...]:
    """Every address on the node's interfaces: the primary IPv4 address of each, and
    every IPv6 address."""
    addresses: list[str] = []
    for _, name in socket.if_nameindex():
        if address := _ipv4_of(name):
            addresses.append(address)
    try:
        with open(if_inet6, encoding="ascii") as f:
            for line in f:
                raw = line.split()[0] if line.strip() else ""
                if len(raw) == 32:
                    addresses.append(str(ipaddress.IPv6Address(bytes.fromhex(raw))))
    except OSError:
        pass
    return tuple(addresses)


def node_ip(flag: str = "", node_name: str = "") -> str:
    """The node's primary IP as upstream's kubelet picks it (see ``choose_node_ip``);
    ConfigError when ``--node-ip`` names an address this host does not have."""
    if flag and not ipaddress.ip_address(flag).is_unspecified:
        flag = check_node_ip(flag, interface_ips())
    name = node_name or socket.gethostname()
    try:
        resolved = [str(info[4][0]) for info in socket.getaddrinfo(name, None)]
    except OSError:
        resolved = []
    return choose_node_ip(flag, name, list(dict.fromkeys(resolved)), interface_ips(),
                          default_route_ipv4())
