"""Command-line flags, named as upstream's kubelet names them, merged with the --config
file and checked into one ``KubeletFlags`` (see the package's docstring to add one)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from actors.app.config.cert_files import CERT_DIR_NAME
from actors.app.config.cluster_mode import (
    add_certificate_flags,
    add_cluster_flags,
    add_node_status_flags,
    register_with_taints,
)
from actors.app.config.config_dir import load_config
from actors.app.config.container_logs import add_container_log_flags, container_log_settings
from actors.app.config.eviction import add_eviction_flags, eviction_config
from actors.app.config.feature_gates import OWN_DEFAULTS as GATE_DEFAULTS
from actors.app.config.feature_gates import parse_feature_gates
from actors.app.config.gc import add_gc_flags, gc_settings, max_container_restart_period
from actors.app.config.kubelet_config import DEST_OF_FIELD
from actors.app.config.logs_and_trace import add_logging_flags, add_trace_flags, check_trace
from actors.app.config.network import add_network_flags, check_cni_dir
from actors.app.config.origins import Origins, Problems, flag_names, invalid
from actors.app.config.pflag import FlagParser, GoBool
from actors.app.config.pflag_values import DURATION, INT32, MAP_STRING_BOOL
from actors.app.config.pod_settings import (
    add_pod_flags,
    parse_allowed_unsafe_sysctls,
    parse_cluster_dns,
    parse_node_labels,
    parse_runtime_classes,
)
from actors.app.config.reserved import add_reserved_flags, reserved_settings
from actors.app.config.serving import DEFAULT_ADDRESS as DEFAULT_ADDRESS
from actors.app.config.serving import DEFAULT_PORT as DEFAULT_PORT
from actors.app.config.serving import (
    add_port_flags,
    add_security_flags,
    check_tls,
    security_defaults,
    split_names,
)
from actors.app.config.shutdown import shutdown_problems, shutdown_settings
from actors.app.config.verbosity import log_level
from actors.app.output_format import JSON, TABLE, YAML
from actors.core.trace.writer import DEFAULT_MAX_FILES as TRACE_MAX_FILES
from actors.core.trace.writer import DEFAULT_WRITE_EVERY as TRACE_FLUSH_FREQUENCY
from actors.kubelet.gc_settings import GCSettings
from runtime.cm.names import DRIVERS
from runtime.errors import ConfigError
from runtime.events.v1 import go_duration
from runtime.eviction.api import EvictionConfig
from runtime.nodeshutdown import ShutdownGracePeriodByPodPriority

RUNONCE_FORMATS = (TABLE, JSON, YAML)
"""The formats of --runonce's -o (actors.app.report prints them)."""

if TYPE_CHECKING:
    from runtime.kubeapi.nodestatus import Taint

DEFAULT_ROOT_DIR = "/var/lib/kubelet-actors"
DEFAULT_POD_LOGS_DIR = "/var/log/pods"
DEFAULT_PAUSE_IMAGE = "localhost:5000/kubelet-actors/pause:3.9"


class KubeletFlags(Struct, frozen=True):
    """The kubelet's whole configuration, as the daemon's wiring reads it: the flags with
    the --config file's values under them, defaulted, checked and typed (durations in
    seconds, lists as tuples, the eviction, GC and TLS settings parsed)."""

    pod_manifest_path: str
    container_runtime_endpoint: str
    root_dir: str
    pod_logs_dir: str
    node_name: str
    pod_infra_container_image: str
    runonce: bool
    runonce_timeout: float
    output: str
    log_level: str  # loguru's: --log-level, else --v's (actors.app.config.verbosity)
    log_format: str
    runtime_request_timeout: float
    pod_cidr: str  # "" unless given: the runtime is told none at start, as upstream
    cni_bridge_name: str
    manifest_url: str
    address: str
    port: int  # 0: the main port off (enableServer: false, --enable-server=false)
    read_only_port: int
    healthz_port: int
    healthz_bind_address: str
    max_pods: int
    sync_frequency: float
    file_check_frequency: float
    http_check_frequency: float
    trace_dir: str
    trace_max_bytes: int
    node_labels: tuple[tuple[str, str], ...]
    allowed_unsafe_sysctls: tuple[str, ...]
    cgroups_per_qos: bool = True
    cgroup_root: str = "/"
    cgroup_driver: str = "cgroupfs"
    node_ip: str = ""
    cluster_dns: tuple[str, ...] = ()
    cluster_domain: str = ""
    resolv_conf: str = "/etc/resolv.conf"
    seccomp_default: bool = False
    # cluster mode (empty kubeconfig: standalone)
    kubeconfig: str = ""
    register_node: bool = False
    register_with_taints: tuple[Taint, ...] = ()
    node_status_update_frequency: float = 10.0
    volume_stats_agg_period: float = 60.0  # how often volumes' disk usage is walked
    stats_collection_period: float = 10.0  # our own: the stats actor's period; 0 = off
    node_status_report_frequency: float = 300.0
    node_lease_duration_seconds: int = 40
    node_status_max_images: int = 50
    # the main port's TLS, authentication and authorization (see serving.security_defaults)
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    cert_dir: str = ""
    tls_min_version: str = ""
    tls_cipher_suites: tuple[str, ...] = ()
    client_ca_file: str = ""
    anonymous_auth: bool = True
    authentication_token_webhook: bool = False
    authentication_token_webhook_cache_ttl: float = 120.0
    authorization_mode: str = "AlwaysAllow"
    authorization_webhook_cache_authorized_ttl: float = 300.0
    authorization_webhook_cache_unauthorized_ttl: float = 30.0
    feature_gates: tuple[tuple[str, bool], ...] = ()
    # certs: TLS bootstrap and certificate rotation (runtime/kubeapi/bootstrap.py,
    # certificate_manager.py; actors/app/certificates.py)
    bootstrap_kubeconfig: str = ""
    rotate_certificates: bool = False
    server_tls_bootstrap: bool = False
    # container and image GC, crash-loop back-off cap (actors.app.config.gc)
    garbage_collection: GCSettings = field(default_factory=GCSettings)
    max_container_restart_period: float = 300.0
    # container log rotation (runtime.kuberuntime.log_rotation); max size < 0: off
    container_log_max_size: int = 10 * 2**20
    container_log_max_files: int = 5
    container_log_max_workers: int = 1
    container_log_monitor_interval: float = 10.0
    eviction: EvictionConfig = field(default_factory=EvictionConfig)  # --eviction-*
    trace_max_files: int = TRACE_MAX_FILES  # our own: trace files kept (the newest)
    trace_flush_frequency: float = TRACE_FLUSH_FREQUENCY  # our own: a record's wait, at most
    # our own: standalone, runtime class name -> CRI runtime handler (--runtime-classes)
    runtime_classes: tuple[tuple[str, str], ...] = ()
    verbosity: int = 0  # klog's --v (logging.verbosity), which log_level follows
    vmodule: tuple[tuple[str, int], ...] = ()  # klog's --vmodule: (file pattern, verbosity)
    config_dir: str = ""  # --config-dir: the KubeletConfiguration drop-ins' directory
    # graceful node shutdown (actors.app.config.shutdown; config file only, as upstream)
    shutdown_grace_period: float = 0.0
    shutdown_grace_period_critical_pods: float = 0.0
    shutdown_grace_period_by_pod_priority: tuple[ShutdownGracePeriodByPodPriority, ...] = ()
    logind_conf_dir: str = "/etc/systemd/logind.conf.d"  # our own: where the drop-in goes
    # node allocatable (actors.app.config.reserved, runtime.cm.node_allocatable)
    system_reserved: tuple[tuple[str, str], ...] = ()  # resource -> quantity text
    kube_reserved: tuple[tuple[str, str], ...] = ()
    reserved_cpus: str = ""  # a cpuset list, checked
    enforce_node_allocatable: tuple[str, ...] = ("pods",)
    system_reserved_cgroup: str = ""
    kube_reserved_cgroup: str = ""
    # the embedded containerd's CNI dirs ("": its defaults; see runtime.containerd.config)
    cni_bin_dir: str = ""
    cni_conf_dir: str = ""


def build_parser(only_given: bool = False) -> argparse.ArgumentParser:
    """The flags, with pflag's habits (actors.app.config.pflag): every boolean a ``GoBool``,
    each help saying what the flag does (the formatter adds its default); with
    ``only_given``, parsing yields only the flags the user typed."""
    parser = FlagParser(
        prog="kubelet-actors",
        description="A Kubernetes node agent that runs pods on a CRI v1 runtime (containerd).",
    )

    def add(*names: str, **options: Any) -> None:
        if only_given:
            options["default"] = argparse.SUPPRESS
        parser.add_argument(*names, **options)

    add("--config", default="",
        help="a KubeletConfiguration file (kubelet.config.k8s.io/v1beta1); flags win over it")
    add("--config-dir", default="",
        help="a directory of KubeletConfiguration drop-ins: its *.conf files, in lexical "
             "order, merged over --config as upstream merges them; flags win over both")
    add("--pod-manifest-path", default="",
        help="the directory (or file) of static pod manifests")
    add("--container-runtime-endpoint", default="",
        help="the CRI runtime's endpoint, e.g. unix:///run/containerd/containerd.sock; "
             "without it the kubelet runs its own containerd under --root-dir")
    add("--root-dir", default=DEFAULT_ROOT_DIR, help="where the kubelet keeps its state")
    add("--pod-logs-dir", default=DEFAULT_POD_LOGS_DIR, help="where containers' logs are written")
    add("--node-name", "--hostname-override", dest="node_name", default="",
        help="the node's name (default: the host name, lower-cased)")
    add("--pod-infra-container-image", default=DEFAULT_PAUSE_IMAGE,
        help="the sandbox (pause) image of the embedded containerd")
    add_network_flags(add)
    add("--manifest-url", default="",
        help="the URL of a pod manifest (one pod or a PodList)")
    add_port_flags(add)
    add("--cgroups-per-qos", action=GoBool, default=True,
        help="put the pods' cgroups under <cgroup-root>/kubepods, by QoS class")
    add("--cgroup-root", default="",
        help='the root cgroup of the pods\' cgroups (default "/")')
    add("--cgroup-driver", choices=DRIVERS, default="cgroupfs",
        help="how cgroups are named, cgroupfs or systemd: as the runtime names them (the "
             "embedded containerd uses cgroupfs)")
    add("--max-pods", type=INT32, default=110, help="the most pods this node runs")
    add("--feature-gates", type=MAP_STRING_BOOL, default="",
        help="gates to turn on or off, Gate=true,Gate2=false: every gate of upstream's "
             "kubelet, each accepted at upstream's default and refused at a value that "
             "asks for what this node does not implement; this node's own, either value: "
             + ", ".join(f"{g} (default {str(d).lower()})" for g, d in GATE_DEFAULTS.items()))
    add_pod_flags(add)
    add("--sync-frequency", type=DURATION, default=60.0,
        help="how often every pod is synced again")
    add("--file-check-frequency", type=DURATION, default=20.0,
        help="how often the manifest directory is listed again")
    add("--http-check-frequency", type=DURATION, default=20.0,
        help="how often --manifest-url is fetched again")
    add_trace_flags(add)
    add("--runonce", action=GoBool, default=False,
        help="start the pods of the manifests, wait until they run, print them and exit")
    add("--runonce-timeout", type=DURATION, default=120.0,
        help="with --runonce: how long to wait for the pods")
    add("-o", "--output", choices=RUNONCE_FORMATS, default=TABLE,
        help="with --runonce: the output format of the result")
    add("--runtime-request-timeout", type=DURATION, default=120.0,
        help="the timeout of every CRI call but image pulls")
    add_cluster_flags(add)
    add("--volume-stats-agg-period", type=DURATION, default=60.0,
        help="how often the disk usage of volumes and logs is computed for /stats/summary")
    add("--stats-collection-period", type=DURATION, default=10.0,
        help="this project's own: how often resource stats are collected for "
             "/stats/summary and the metrics endpoints (as cAdvisor's housekeeping "
             "interval; 0 turns them off)")
    add_container_log_flags(add)
    add_node_status_flags(add)
    add_certificate_flags(add)
    add_security_flags(add)
    add_gc_flags(add)
    add_eviction_flags(add)
    add("--kubelet-actors-logind-conf-dir", dest="logind_conf_dir",
        default="/etc/systemd/logind.conf.d",
        help="this project's own: graceful node shutdown writes logind's drop-in "
             "99-kubelet.conf here when logind's InhibitDelayMaxSec is shorter than the "
             "shutdown grace period")
    add_reserved_flags(add)
    add_logging_flags(add)
    return parser


def parse_flags(argv: list[str]) -> KubeletFlags:
    """Parse and check flags; argparse exits with usage on syntax, ConfigError on meaning
    (naming the flag, or the --config file and field, that set the value at fault)."""
    ns, origins = _merged(argv)
    return _checked(ns, Problems(origins))


def _merged(argv: list[str]) -> tuple[argparse.Namespace, Origins]:
    """The flags with the --config file's values under them, and where each came from."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    given = frozenset(vars(build_parser(only_given=True).parse_args(argv)))
    set_by_file: set[str] = set()
    file_of: dict[str, str] = {}
    if ns.config or ns.config_dir:
        loaded = load_config(ns.config, ns.config_dir)
        for dest, value in loaded.values.items():
            if dest not in given:
                setattr(ns, dest, value)
                set_by_file.add(dest)
        file_of = loaded.file_of
    return ns, Origins(ns.config, frozenset(set_by_file), given, flag_names(parser),
                       file_of=file_of)


def _checked(ns: argparse.Namespace, problems: Problems) -> KubeletFlags:
    """The merged settings, checked as upstream checks them (ValidateKubeletConfiguration
    and the managers' constructors), as KubeletFlags. Every check runs; all the rules
    broken are reported together, as upstream's aggregate error does."""
    check = problems.check
    endpoint = ns.container_runtime_endpoint
    with check():
        if endpoint and not (endpoint.startswith("unix://") or endpoint.startswith("/")):
            raise invalid("containerRuntimeEndpoint",
                          f'"{endpoint}": only unix sockets are supported '
                          "(unix:///path/to.sock)")
    with check():
        if ns.runonce and not ns.pod_manifest_path:
            raise ConfigError("--runonce needs --pod-manifest-path: there is nothing to run")
        if not ns.runonce and not (ns.pod_manifest_path or ns.manifest_url or ns.kubeconfig):
            raise ConfigError("give --pod-manifest-path, --manifest-url or --kubeconfig: there "
                              "is nothing to run")
    with check():  # certs
        if ns.bootstrap_kubeconfig and not ns.kubeconfig:
            raise ConfigError("--bootstrap-kubeconfig needs --kubeconfig: the path the "
                              "kubeconfig pointing at the bootstrapped certificate is "
                              "written to")
    _check_positive_periods(ns, ("nodeStatusUpdateFrequency", "nodeStatusReportFrequency"),
                            problems)
    lease_seconds = getattr(ns, "node_lease_duration_seconds", 40)
    with check():
        if ns.node_status_max_images < -1:
            raise invalid("nodeStatusMaxImages", "invalid configuration: nodeStatusMaxImages "
                          f"(--node-status-max-images) {ns.node_status_max_images} must be -1 "
                          "or greater")
    with check():
        if lease_seconds <= 0:
            raise invalid("nodeLeaseDurationSeconds", "invalid configuration: "
                          "nodeLeaseDurationSeconds must be greater than 0")
    with check():
        if ns.manifest_url and not ns.manifest_url.startswith(("http://", "https://")):
            raise invalid("staticPodURL",
                          f'"{ns.manifest_url}": must be an http:// or https:// URL')
    with check():
        security_defaults(ns)
    # Upstream's words. 0 turns the read-only and healthz ports off; the main port is
    # turned off by enableServer (--enable-server=false), and needs a port still, as upstream.
    for name, flag, value, lowest in (("port", "--port", ns.port, 1),
                                      ("readOnlyPort", "--read-only-port", ns.read_only_port, 0),
                                      ("healthzPort", "--healthz-port", ns.healthz_port, 1)):
        with check():
            if (value != 0 or name == "port") and not 1 <= value <= 65535:
                raise invalid(name, f"invalid configuration: {name} ({flag}) {value} must be "
                                    f"between {lowest} and 65535, inclusive")
    check_trace(ns, check)
    with check():
        if ns.max_pods < 1:
            # Upstream lets 0 through ("must not be a negative number"); a node here runs a
            # pod.
            raise invalid("maxPods", "invalid configuration: maxPods (--max-pods) "
                                     f"{ns.max_pods} must be greater than 0")
    _check_positive_periods(ns, ("syncFrequency", "fileCheckFrequency", "httpCheckFrequency",
                                 "runtimeRequestTimeout"), problems)
    for name, address in (("address", ns.address),
                          ("healthzBindAddress", ns.healthz_bind_address)):
        with check():
            try:
                ipaddress.ip_address(address)
            except ValueError as err:
                raise invalid(name, str(err)) from err
    log_rotation = problems.value(lambda: container_log_settings(ns)) or {}
    with check():
        if ns.runonce_timeout <= 0:
            raise ConfigError(f"--runonce-timeout {ns.runonce_timeout}: must be more than 0")
    with check():
        try:
            if ns.pod_cidr:
                ipaddress.ip_network(ns.pod_cidr)
        except ValueError as err:
            raise invalid("podCIDR", f'"{ns.pod_cidr}": {err}') from err
    for flag, directory in (("--cni-bin-dir", ns.cni_bin_dir),
                            ("--cni-conf-dir", ns.cni_conf_dir)):
        with check():
            check_cni_dir(flag, directory, endpoint)
    with check():
        if ns.cgroup_root and not ns.cgroup_root.startswith("/") and not (
                ns.cgroup_driver == "systemd" and ns.cgroup_root.endswith(".slice")):
            raise ConfigError(f'"{ns.cgroup_root}": must be an absolute cgroup path (or a '
                              ".slice with --cgroup-driver=systemd)", field="cgroupRoot",
                              related=("cgroupDriver",))
    with check():
        check_tls(ns)
    node = (ns.node_name or socket.gethostname()).lower()
    gates = problems.value(lambda: parse_feature_gates(ns.feature_gates))
    with check():
        if ns.node_ip:
            try:
                ipaddress.ip_address(ns.node_ip)
            except ValueError as err:
                raise ConfigError(f'--node-ip "{ns.node_ip}": {err}') from err
    garbage_collection = problems.value(lambda: gc_settings(ns))
    # The restart period's check reads the gates: not checked against gates that broke.
    restart_period = (0.0 if gates is None else
                      problems.value(lambda: max_container_restart_period(ns, gates)) or 0.0)
    eviction = problems.value(lambda: eviction_config(ns))
    shutdown = shutdown_settings(ns)
    for problem in shutdown_problems(*shutdown, gates) if gates is not None else ():
        with check():
            raise problem
    node_labels = problems.value(lambda: parse_node_labels(ns.node_labels)) or ()
    unsafe_sysctls = problems.value(
        lambda: parse_allowed_unsafe_sysctls(ns.allowed_unsafe_sysctls)) or ()
    cluster_dns = problems.value(lambda: parse_cluster_dns(ns.cluster_dns)) or ()
    taints = problems.value(lambda: register_with_taints(ns.register_with_taints)) or ()
    runtime_classes = problems.value(
        lambda: parse_runtime_classes(ns.runtime_classes, bool(ns.kubeconfig))) or ()
    reserved = reserved_settings(ns, problems.check)
    problems.raise_found()
    # raise_found raised if a value was not made
    assert gates is not None and garbage_collection is not None and eviction is not None
    return KubeletFlags(
        pod_manifest_path=ns.pod_manifest_path,
        container_runtime_endpoint=endpoint,
        root_dir=os.path.abspath(ns.root_dir),
        pod_logs_dir=os.path.abspath(ns.pod_logs_dir),
        node_name=node,
        pod_infra_container_image=ns.pod_infra_container_image,
        runonce=ns.runonce,
        runonce_timeout=ns.runonce_timeout,
        output=ns.output,
        log_level=ns.log_level or log_level(ns.verbosity),
        verbosity=ns.verbosity,
        vmodule=ns.vmodule,
        config_dir=_abspath(ns.config_dir),
        log_format=ns.log_format,
        runtime_request_timeout=ns.runtime_request_timeout,
        pod_cidr=ns.pod_cidr,
        cni_bridge_name=ns.cni_bridge_name,
        cni_bin_dir=ns.cni_bin_dir,
        cni_conf_dir=ns.cni_conf_dir,
        manifest_url=ns.manifest_url,
        address=ns.address,
        port=ns.port if ns.enable_server else 0,  # 0: the main port off
        read_only_port=ns.read_only_port,
        healthz_port=ns.healthz_port,
        healthz_bind_address=ns.healthz_bind_address,
        max_pods=ns.max_pods,
        feature_gates=gates,
        garbage_collection=garbage_collection,
        max_container_restart_period=restart_period,
        sync_frequency=ns.sync_frequency,
        file_check_frequency=ns.file_check_frequency,
        http_check_frequency=ns.http_check_frequency,
        trace_dir=os.path.abspath(ns.trace_dir) if ns.trace_dir else "",
        trace_max_bytes=ns.trace_max_bytes,
        trace_max_files=ns.trace_max_files,
        trace_flush_frequency=ns.trace_flush_frequency,
        node_labels=node_labels,
        allowed_unsafe_sysctls=unsafe_sysctls,
        runtime_classes=runtime_classes,
        cgroups_per_qos=ns.cgroups_per_qos,
        # Upstream: "--cgroups-per-qos enabled, but --cgroup-root was not specified.
        # defaulting to /".
        cgroup_root=ns.cgroup_root or "/",
        cgroup_driver=ns.cgroup_driver,
        eviction=eviction,
        node_ip=ns.node_ip,
        cluster_dns=cluster_dns,
        cluster_domain=ns.cluster_domain,
        resolv_conf=os.path.abspath(ns.resolv_conf) if ns.resolv_conf else "",
        seccomp_default=ns.seccomp_default,
        kubeconfig=os.path.abspath(ns.kubeconfig) if ns.kubeconfig else "",
        register_node=bool(ns.kubeconfig) if ns.register_node is None else ns.register_node,
        register_with_taints=taints,
        node_status_update_frequency=ns.node_status_update_frequency,
        node_status_report_frequency=ns.node_status_report_frequency,
        volume_stats_agg_period=ns.volume_stats_agg_period,
        stats_collection_period=ns.stats_collection_period,
        node_lease_duration_seconds=lease_seconds,
        node_status_max_images=ns.node_status_max_images,
        bootstrap_kubeconfig=_abspath(ns.bootstrap_kubeconfig),
        rotate_certificates=ns.rotate_certificates,
        server_tls_bootstrap=ns.server_tls_bootstrap,
        tls_cert_file=_abspath(ns.tls_cert_file),
        tls_private_key_file=_abspath(ns.tls_private_key_file),
        cert_dir=_abspath(ns.cert_dir) or os.path.join(os.path.abspath(ns.root_dir), CERT_DIR_NAME),
        tls_min_version=ns.tls_min_version,
        tls_cipher_suites=split_names(ns.tls_cipher_suites),
        client_ca_file=_abspath(ns.client_ca_file),
        anonymous_auth=ns.anonymous_auth,
        authentication_token_webhook=ns.authentication_token_webhook,
        authentication_token_webhook_cache_ttl=ns.authentication_token_webhook_cache_ttl,
        authorization_mode=ns.authorization_mode,
        **log_rotation,
        shutdown_grace_period=shutdown[0],
        shutdown_grace_period_critical_pods=shutdown[1],
        shutdown_grace_period_by_pod_priority=shutdown[2],
        logind_conf_dir=os.path.abspath(ns.logind_conf_dir),
        **reserved,
        authorization_webhook_cache_authorized_ttl=ns.authorization_webhook_cache_authorized_ttl,
        authorization_webhook_cache_unauthorized_ttl=(
            ns.authorization_webhook_cache_unauthorized_ttl),
    )


def _check_positive_periods(ns: argparse.Namespace, fields: tuple[str, ...],
                            problems: Problems) -> None:
    """Periods that must be more than 0 (upstream's words for draManagerReconcilePeriod)."""
    for name in fields:
        seconds = getattr(ns, DEST_OF_FIELD[name])
        with problems.check():
            if seconds <= 0:
                raise invalid(name, f"invalid configuration: {name} {go_duration(seconds)} "
                                    "must be greater than zero")


def _abspath(path: str) -> str:
    return os.path.abspath(path) if path else ""
