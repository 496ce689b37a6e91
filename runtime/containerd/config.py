"""The configuration files of the embedded containerd: its config.toml and its CNI network.

Everything the embedded containerd touches lives under ``<base>/containerd`` (its root,
state dir, socket, CNI config, host-local IPAM data, log), so it never meets a system
containerd (``/run/containerd/containerd.sock``, ``/var/lib/containerd``) and a test can run
one in a temporary directory and remove it whole. The keys are containerd 1.6's (config
version 2, as ``containerd config default`` prints them on these machines).

The pod network comes one of two ways:
- a fixed network (standalone, run-once): the kubelet writes a bridge conflist with one
  subnet (``--pod-cidr``, else 10.88.0.0/16) into the CNI conf dir;
- the node's own range (cluster mode, ``pod_cidr_from_kubelet``): the kubelet writes no
  conflist but a template (the CRI plugin's ``cni.conf_template``), and containerd renders it
  into ``<conf dir>/10-containerd-net.conflist`` when the kubelet gives it the Node's
  ``spec.podCIDRs`` through CRI UpdateRuntimeConfig; until then containerd reports
  NetworkReady=false ("cni config uninitialized"). The rendered network keeps this node's
  bridge name, network name and host-local data dir, so two embedded nodes on one machine
  do not share them.

The CNI conf dir is the embedded containerd's own (``<base>/containerd/cni/net.d``) unless
``--cni-conf-dir`` names one; a named dir belongs to the operator (or a CNI plugin that drops
its config there): the kubelet writes and removes nothing in it, and containerd loads what
it finds there (in cluster mode it renders the template there when it finds nothing).

The files are rendered by pure functions (``render_config_toml``, ``render_cni_conflist``,
``render_cni_template``) and written atomically by ``write_config_files``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from runtime.errors import ContainerdError

DEFAULT_SANDBOX_IMAGE = "localhost:5000/kubelet-actors/pause:3.9"
"""The pod sandbox image scripts/images.sh builds and pushes to the loopback registry."""

DEFAULT_RUNTIME_HANDLER = "runc"
"""The CRI runtime handler of pods that name no runtime class (containerd's default)."""
ALT_RUNTIME_HANDLER = "runc-alt"
"""A second handler on the same runc, with the same options: a pod whose RuntimeClass names
it runs exactly as on the default one, and CRI PodSandboxStatus (and ListPodSandbox) report
``runtime_handler`` "runc-alt", so a RuntimeClass can be seen choosing its handler."""
RUNTIME_HANDLERS: tuple[str, ...] = (DEFAULT_RUNTIME_HANDLER, ALT_RUNTIME_HANDLER)

DEFAULT_BRIDGE_NAME = "kacni0"
DEFAULT_SUBNET = "10.88.0.0/16"
DEFAULT_CNI_BIN_DIR = "/usr/lib/cni"
"""Where Debian's containernetworking-plugins puts the plugins."""
RENDERED_CONFLIST = "10-containerd-net.conflist"
"""The file containerd 1.6's CRI plugin renders its ``conf_template`` into (in conf_dir)."""

# Plugins the kubelet never uses. Disabling them saves probing at startup (btrfs, zfs,
# devmapper, aufs log errors on hosts without them) and keeps the plugin list honest.
# "io.containerd.runtime.v1.linux" must stay: without it 1.6's tasks-service, and so the
# CRI plugin, fail to load.
DISABLED_PLUGINS: tuple[str, ...] = (
    "io.containerd.snapshotter.v1.aufs",
    "io.containerd.snapshotter.v1.btrfs",
    "io.containerd.snapshotter.v1.devmapper",
    "io.containerd.snapshotter.v1.zfs",
    "io.containerd.tracing.processor.v1.otlp",
    "io.containerd.internal.v1.tracing",
)

# sockaddr_un.sun_path is 108 bytes with its NUL; containerd also listens on "<sock>.ttrpc".
_MAX_SOCKET_PATH = 107 - len(".ttrpc")
_BRIDGE_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
_LOG_LEVELS = frozenset({"trace", "debug", "info", "warn", "error", "fatal", "panic"})


@dataclass(frozen=True, slots=True)
class ContainerdConfig:
    """Where the embedded containerd keeps everything, and how its pods are networked.

    Build one with ``ContainerdConfig.for_base_dir``; paths are absolute.
    """

    base_dir: Path
    """The kubelet's root dir (``/var/lib/kubelet-actors``, or a temporary dir in tests)."""
    sandbox_image: str
    bridge_name: str
    subnet: str
    cni_bin_dir: str = DEFAULT_CNI_BIN_DIR
    ip_masq: bool = False
    """Masquerade pod traffic leaving the node (adds iptables rules; pods here only talk to
    each other and to the node, so it is off unless asked for)."""
    log_level: str = "info"
    state_dir_override: Path | None = None
    """Put the state dir (bundles, netns mounts, fifos) elsewhere, e.g. on a tmpfs."""
    cni_conf_dir_override: Path | None = None
    """The operator's CNI conf dir (``--cni-conf-dir``); None: the embedded one's own."""
    pod_cidr_from_kubelet: bool = False
    """Cluster mode: no fixed conflist; containerd renders the template with the pod CIDRs
    the kubelet gives it (CRI UpdateRuntimeConfig). ``subnet`` is then unused."""

    @classmethod
    def for_base_dir(
        cls,
        base_dir: str | os.PathLike[str],
        *,
        sandbox_image: str = DEFAULT_SANDBOX_IMAGE,
        bridge_name: str = DEFAULT_BRIDGE_NAME,
        subnet: str = DEFAULT_SUBNET,
        cni_bin_dir: str = DEFAULT_CNI_BIN_DIR,
        ip_masq: bool = False,
        log_level: str = "info",
        state_dir: str | os.PathLike[str] | None = None,
        cni_conf_dir: str | os.PathLike[str] | None = None,
        pod_cidr_from_kubelet: bool = False,
    ) -> ContainerdConfig:
        """A validated configuration rooted at ``<base_dir>/containerd``.

        Raises ContainerdError when a value cannot work (a socket path too long for a unix
        socket, a bridge name Linux refuses, a subnet that is not a network, a CNI dir
        that is not absolute, ...).
        """
        config = cls(
            base_dir=Path(os.path.abspath(base_dir)),
            sandbox_image=sandbox_image,
            bridge_name=bridge_name,
            subnet=subnet,
            cni_bin_dir=cni_bin_dir,
            ip_masq=ip_masq,
            log_level=log_level,
            state_dir_override=Path(os.path.abspath(state_dir)) if state_dir else None,
            cni_conf_dir_override=Path(cni_conf_dir) if cni_conf_dir else None,
            pod_cidr_from_kubelet=pod_cidr_from_kubelet,
        )
        config.validate()
        return config

    # --- paths ---------------------------------------------------------------------------

    @property
    def containerd_dir(self) -> Path:
        return self.base_dir / "containerd"

    @property
    def config_path(self) -> Path:
        return self.containerd_dir / "config.toml"

    @property
    def socket_path(self) -> Path:
        return self.containerd_dir / "containerd.sock"

    @property
    def endpoint(self) -> str:
        """The CRI endpoint, as ``--container-runtime-endpoint`` takes it."""
        return f"unix://{self.socket_path}"

    @property
    def root_dir(self) -> Path:
        return self.containerd_dir / "root"

    @property
    def state_dir(self) -> Path:
        return self.state_dir_override or self.containerd_dir / "state"

    @property
    def opt_dir(self) -> Path:
        return self.containerd_dir / "opt"

    @property
    def cni_conf_dir(self) -> Path:
        return self.cni_conf_dir_override or self.containerd_dir / "cni" / "net.d"

    @property
    def owns_cni_conf_dir(self) -> bool:
        """Whether the CNI conf dir is the embedded containerd's own (no --cni-conf-dir)."""
        return self.cni_conf_dir_override is None

    @property
    def cni_template_path(self) -> Path:
        """The CRI plugin's ``conf_template`` (cluster mode): outside the conf dir, so
        containerd never loads the template itself as a network."""
        return self.containerd_dir / "cni" / "conflist.template"

    @property
    def rendered_conflist_path(self) -> Path:
        """Where containerd renders the template."""
        return self.cni_conf_dir / RENDERED_CONFLIST

    @property
    def cni_ipam_dir(self) -> Path:
        """host-local's allocation records (instead of the shared /var/lib/cni/networks)."""
        return self.containerd_dir / "cni" / "ipam"

    @property
    def network_name(self) -> str:
        return f"kubelet-actors-{self.bridge_name}"

    @property
    def cni_conflist_path(self) -> Path:
        return self.cni_conf_dir / f"10-{self.network_name}.conflist"

    @property
    def log_path(self) -> Path:
        return self.containerd_dir / "containerd.log"

    @property
    def pid_path(self) -> Path:
        return self.containerd_dir / "containerd.pid"

    @property
    def netns_dir(self) -> Path:
        """Where the CRI plugin mounts pod network namespaces (netns_mounts_under_state_dir)."""
        return self.state_dir / "io.containerd.grpc.v1.cri" / "netns"

    # --- checks --------------------------------------------------------------------------

    def validate(self) -> None:
        """Raise ContainerdError naming the first value that cannot work."""
        sock = str(self.socket_path)
        if len(sock.encode()) > _MAX_SOCKET_PATH:
            raise ContainerdError(
                f"containerd socket path {sock!r} is {len(sock.encode())} bytes; unix socket "
                f"paths (with their .ttrpc sibling) must stay within {_MAX_SOCKET_PATH}: "
                "use a shorter base dir"
            )
        if not _BRIDGE_NAME_RE.match(self.bridge_name):
            raise ContainerdError(
                f"bridge name {self.bridge_name!r} is not a Linux interface name "
                "(1-15 characters of letters, digits, '_', '.', '-')"
            )
        try:
            net = ipaddress.ip_network(self.subnet, strict=True)
        except ValueError as err:
            raise ContainerdError(f"pod subnet {self.subnet!r} is not a network: {err}") from err
        if net.num_addresses < 4:
            raise ContainerdError(f"pod subnet {self.subnet!r} is too small for a bridge")
        for what, path in (("CNI bin dir", Path(self.cni_bin_dir)),
                           ("CNI conf dir", self.cni_conf_dir)):
            if not path.is_absolute():
                raise ContainerdError(f"{what} {str(path)!r}: must be an absolute path")
        if not self.sandbox_image:
            raise ContainerdError("the sandbox image must be named")
        if self.log_level not in _LOG_LEVELS:
            raise ContainerdError(
                f"containerd log level {self.log_level!r} is not one of {sorted(_LOG_LEVELS)}"
            )


def _q(value: str) -> str:
    """A TOML basic string (JSON's escapes are a subset of TOML's)."""
    return json.dumps(value)


def _qlist(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(_q(v) for v in values) + "]"


def render_config_toml(config: ContainerdConfig) -> str:
    """containerd 1.6's config.toml (version 2) for ``config``."""
    cri = '[plugins."io.containerd.grpc.v1.cri"]'
    runtimes: list[str] = []
    for handler in RUNTIME_HANDLERS:
        section = f'[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.{handler}]'
        runtimes += [
            section,
            '  runtime_type = "io.containerd.runc.v2"',
            "",
            f"{section[:-1]}.options]",
            "  SystemdCgroup = false",
            "",
        ]
    lines = [
        "# Written by kubelet-actors (runtime/containerd/config.py); rewritten at each start.",
        "version = 2",
        f"root = {_q(str(config.root_dir))}",
        f"state = {_q(str(config.state_dir))}",
        "oom_score = 0",
        f"disabled_plugins = {_qlist(DISABLED_PLUGINS)}",
        "",
        "[grpc]",
        f"  address = {_q(str(config.socket_path))}",
        "  uid = 0",
        "  gid = 0",
        "",
        "[debug]",
        f"  level = {_q(config.log_level)}",
        "",
        '[plugins."io.containerd.internal.v1.opt"]',
        f"  path = {_q(str(config.opt_dir))}",
        "",
        cri,
        f"  sandbox_image = {_q(config.sandbox_image)}",
        # Without it RunPodSandbox fails here: "failed to update /proc/self/oom_score_adj".
        "  restrict_oom_score_adj = true",
        # Pod netns mounts under our state dir, not the host's shared /run/netns.
        "  netns_mounts_under_state_dir = true",
        '  stream_server_address = "127.0.0.1"',
        '  stream_server_port = "0"',
        "  enable_tls_streaming = false",
        "  disable_tcp_service = true",
        "  disable_cgroup = false",
        "  disable_apparmor = true",
        "  tolerate_missing_hugetlb_controller = true",
        "  disable_hugetlb_controller = true",
        "  max_container_log_line_size = 16384",
        "",
        f"{cri[:-1]}.cni]",
        f"  bin_dir = {_q(config.cni_bin_dir)}",
        f"  conf_dir = {_q(str(config.cni_conf_dir))}",
        *([f"  conf_template = {_q(str(config.cni_template_path))}"]
          if config.pod_cidr_from_kubelet else []),
        "  max_conf_num = 1",
        "",
        f"{cri[:-1]}.containerd]",
        '  snapshotter = "overlayfs"',
        f"  default_runtime_name = {_q(DEFAULT_RUNTIME_HANDLER)}",
        "  disable_snapshot_annotations = true",
        "",
        *runtimes,
        f"{cri[:-1]}.registry]",
        '  config_path = ""',
        "",
    ]
    return "\n".join(lines)


# The ranges and routes of the template, in Go text/template (containerd 1.6's
# cniConfigTemplate: PodCIDRRanges, the CIDRs UpdateRuntimeConfig gave; Routes, a default
# route per IP family among them).
_TEMPLATE_RANGES = ('[{{range $i, $r := .PodCIDRRanges}}{{if $i}}, {{end}}'
                    '[{"subnet": "{{$r}}"}]{{end}}]')
_TEMPLATE_ROUTES = '[{{range $i, $r := .Routes}}{{if $i}}, {{end}}{"dst": "{{$r}}"}{{end}}]'
_RANGES_MARK = "@kubelet-actors:ranges@"
_ROUTES_MARK = "@kubelet-actors:routes@"


def _network(config: ContainerdConfig, ranges: object, routes: object) -> dict[str, object]:
    """The pod network: a bridge with host-local IPAM, then portmap for hostPorts.

    The pod's loopback interface is not in this chain: containerd's CRI plugin brings ``lo``
    up itself with the ``loopback`` plugin from the same bin dir.
    """
    return {
        "cniVersion": "1.0.0",
        "name": config.network_name,
        "plugins": [
            {
                "type": "bridge",
                "bridge": config.bridge_name,
                "isGateway": True,
                "ipMasq": config.ip_masq,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": ranges,
                    "routes": routes,
                    "dataDir": str(config.cni_ipam_dir),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}, "snat": True},
        ],
    }


def render_cni_conflist(config: ContainerdConfig) -> str:
    """The fixed pod network: ``config.subnet``, with a default route of its IP family."""
    default = "::/0" if ipaddress.ip_network(config.subnet).version == 6 else "0.0.0.0/0"
    network = _network(config, [[{"subnet": config.subnet}]], [{"dst": default}])
    return json.dumps(network, indent=2) + "\n"


def render_cni_template(config: ContainerdConfig) -> str:
    """The same network as a containerd ``conf_template``: its ranges and routes are the pod
    CIDRs the kubelet gives containerd (one range per CIDR, dual stack included)."""
    text = json.dumps(_network(config, _RANGES_MARK, _ROUTES_MARK), indent=2) + "\n"
    return (text.replace(json.dumps(_RANGES_MARK), _TEMPLATE_RANGES)
            .replace(json.dumps(_ROUTES_MARK), _TEMPLATE_ROUTES))


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_config_files(config: ContainerdConfig, fresh: bool = True) -> None:
    """Create the directories and (re)write config.toml and the pod network's file.

    The network's file is the fixed conflist, or (``pod_cidr_from_kubelet``) the template
    outside the conf dir. In its own conf dir the kubelet keeps only its network there
    (containerd loads the first conflist it finds): other conflists go, and so does one
    containerd rendered from the template unless ``fresh`` is False (containerd restarted
    under the same kubelet, which gave its pod CIDR already and will not give it again).
    A conf dir given by the operator is left as it is.

    Raises ContainerdError naming the path when a directory or file cannot be written.
    """
    config.validate()
    toml_text = render_config_toml(config)
    tomllib.loads(toml_text)  # a rendering bug shows here, not as a containerd crash
    try:
        for d in (
            config.containerd_dir,
            config.root_dir,
            config.state_dir,
            config.cni_ipam_dir,
        ):
            d.mkdir(parents=True, exist_ok=True)
        for d in (config.root_dir, config.state_dir):
            if d.stat().st_mode & 0o7777 != 0o711:
                os.chmod(d, 0o711)
        if config.pod_cidr_from_kubelet:
            _write_atomically(config.cni_template_path, render_cni_template(config))
            keep = None if fresh else config.rendered_conflist_path
        else:
            keep = config.cni_conflist_path
        if config.owns_cni_conf_dir:
            config.cni_conf_dir.mkdir(parents=True, exist_ok=True)
            for stale in config.cni_conf_dir.iterdir():
                if stale != keep and stale.suffix in {".conf", ".conflist", ".json"}:
                    stale.unlink()
            if not config.pod_cidr_from_kubelet:
                _write_atomically(config.cni_conflist_path, render_cni_conflist(config))
        _write_atomically(config.config_path, toml_text)
    except OSError as err:
        raise ContainerdError(
            f"cannot write the containerd config under {config.containerd_dir}: {err}"
        ) from err
