"""``--config``: a KubeletConfiguration file (kubelet.config.k8s.io/v1beta1), as upstream.

Only the fields kubelet-actors acts on are read; the others are reported once as ignored,
never silently dropped. Flags given on the command line win over the file, as upstream.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from actors.app.config.durations import parse_duration
from actors.app.config.eviction import CONFIG_FIELDS as EVICTION_FIELDS
from actors.app.config.reserved import CONFIG_FIELDS as RESERVED_FIELDS
from runtime.errors import ConfigError, ConfigErrors
from runtime.pod.admission import sysctl_allowlist_error

if TYPE_CHECKING:
    from runtime.kubeapi.nodestatus import Taint

API_VERSION = "kubelet.config.k8s.io/v1beta1"
KIND = "KubeletConfiguration"


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {type(value).__name__}")
    return value


def _duration(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise TypeError("expected a duration string such as 20s or 1m0s, got a number")
    try:
        return parse_duration(_string(value))
    except argparse.ArgumentTypeError as err:
        raise ValueError(str(err)) from err


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {type(value).__name__}")
    return value


def _cgroup_driver(value: Any) -> str:
    if _string(value) not in ("cgroupfs", "systemd"):
        raise ValueError(f'"{value}": must be cgroupfs or systemd')
    return str(value)


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("expected a list of strings")
    return value


def _feature_gates(value: Any) -> str:
    """featureGates: a map of gate to bool, as the --feature-gates text (checked there)."""
    if not isinstance(value, dict) or not all(isinstance(v, bool) for v in value.values()):
        raise TypeError("expected a map of feature gate names to true or false")
    return ",".join(f"{gate}={str(on).lower()}" for gate, on in value.items())


def _runtime_classes(value: Any) -> dict[str, str]:
    """runtimeClasses (kubelet-actors' own): a map of runtime class name to CRI handler,
    checked with --runtime-classes (actors.app.config.flags.parse_runtime_classes)."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in value.items()):
        raise TypeError("expected a map of runtime class names to runtime handlers")
    return value


def _taints(value: Any) -> list[Taint]:
    """registerWithTaints: a list of core/v1 Taints (key, value, effect)."""
    from runtime.kubeapi.nodestatus import parse_taints  # the Node's code: cluster mode's

    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise TypeError("expected a list of taints (key, value, effect)")
    text = ",".join(f"{t.get('key', '')}"
                    + (f"={t['value']}" if t.get("value") else "")
                    + f":{t.get('effect', '')}" for t in value)
    try:
        return list(parse_taints(text, "registerWithTaints"))
    except ConfigError as err:  # the caller names the file and field
        raise ValueError(str(err).removeprefix("registerWithTaints: ")) from err


def _sysctl_patterns(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("expected a list of strings")
    if error := sysctl_allowlist_error(value):
        raise ValueError(error)
    return value


def _block(value: Any, fields: dict[str, tuple[str, Callable[[Any], Any]]],
           where: str) -> dict[str, Any]:
    """A nested block (``authentication``, ``authorization``): its known leaves by flag
    destination; an unknown field is an error naming it."""
    if not isinstance(value, dict):
        raise TypeError("expected an object")
    out: dict[str, Any] = {}
    for key, sub in value.items():
        path = f"{where}.{key}"
        if isinstance(sub, dict):
            out.update(_block(sub, fields, path))
            continue
        if path not in fields:
            raise ValueError(f"{path}: not supported by kubelet-actors")
        dest, convert = fields[path]
        try:
            out[dest] = convert(sub)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{path}: {err}") from err
    return out


def _mode(value: Any) -> str:
    if value not in ("AlwaysAllow", "Webhook"):
        raise ValueError(f"expected AlwaysAllow or Webhook, got {value!r}")
    return str(value)


_SECURITY_FIELDS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "authentication.anonymous.enabled": ("anonymous_auth", _bool),
    "authentication.webhook.enabled": ("authentication_token_webhook", _bool),
    "authentication.webhook.cacheTTL": ("authentication_token_webhook_cache_ttl", _duration),
    "authentication.x509.clientCAFile": ("client_ca_file", _string),
    "authorization.mode": ("authorization_mode", _mode),
    "authorization.webhook.cacheAuthorizedTTL": (
        "authorization_webhook_cache_authorized_ttl", _duration),
    "authorization.webhook.cacheUnauthorizedTTL": (
        "authorization_webhook_cache_unauthorized_ttl", _duration),
}

_CRASH_LOOP_FIELDS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "crashLoopBackOff.maxContainerRestartPeriod": ("max_container_restart_period", _duration),
}

SPREAD = "*"
"""The destination of a block whose converter returns several flag destinations."""

# KubeletConfiguration field -> (flag destination, converter)
FIELDS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "staticPodPath": ("pod_manifest_path", _string),
    "staticPodURL": ("manifest_url", _string),
    "containerRuntimeEndpoint": ("container_runtime_endpoint", _string),
    "podLogsDir": ("pod_logs_dir", _string),
    "address": ("address", _string),
    "port": ("port", _integer),
    "readOnlyPort": ("read_only_port", _integer),
    "healthzPort": ("healthz_port", _integer),
    "healthzBindAddress": ("healthz_bind_address", _string),
    "maxPods": ("max_pods", _integer),
    "syncFrequency": ("sync_frequency", _duration),
    "fileCheckFrequency": ("file_check_frequency", _duration),
    "httpCheckFrequency": ("http_check_frequency", _duration),
    "runtimeRequestTimeout": ("runtime_request_timeout", _duration),
    "podCIDR": ("pod_cidr", _string),
    "allowedUnsafeSysctls": ("allowed_unsafe_sysctls", _sysctl_patterns),
    "cgroupsPerQOS": ("cgroups_per_qos", _bool),
    "cgroupRoot": ("cgroup_root", _string),
    "cgroupDriver": ("cgroup_driver", _cgroup_driver),
    "clusterDNS": ("cluster_dns", _strings),
    "featureGates": ("feature_gates", _feature_gates),
    "clusterDomain": ("cluster_domain", _string),
    "resolvConf": ("resolv_conf", _string),
    "seccompDefault": ("seccomp_default", _bool),
    "runtimeClasses": ("runtime_classes", _runtime_classes),
    "registerNode": ("register_node", _bool),
    "registerWithTaints": ("register_with_taints", _taints),
    "nodeStatusUpdateFrequency": ("node_status_update_frequency", _duration),
    "nodeStatusReportFrequency": ("node_status_report_frequency", _duration),
    "volumeStatsAggPeriod": ("volume_stats_agg_period", _duration),
    "nodeLeaseDurationSeconds": ("node_lease_duration_seconds", _integer),
    "nodeStatusMaxImages": ("node_status_max_images", _integer),
    "containerLogMaxSize": ("container_log_max_size", _string),
    "containerLogMaxFiles": ("container_log_max_files", _integer),
    "containerLogMaxWorkers": ("container_log_max_workers", _integer),
    "containerLogMonitorInterval": ("container_log_monitor_interval", _duration),
    "tlsCertFile": ("tls_cert_file", _string),
    "tlsPrivateKeyFile": ("tls_private_key_file", _string),
    "tlsMinVersion": ("tls_min_version", _string),
    "tlsCipherSuites": ("tls_cipher_suites", _strings),
    "imageGCHighThresholdPercent": ("image_gc_high_threshold", _integer),
    "imageGCLowThresholdPercent": ("image_gc_low_threshold", _integer),
    "imageMinimumGCAge": ("minimum_image_ttl_duration", _duration),
    "imageMaximumGCAge": ("image_maximum_gc_age", _duration),
    "crashLoopBackOff": (SPREAD, lambda v: _block(v, _CRASH_LOOP_FIELDS, "crashLoopBackOff")),
    "evictionMaxPodGracePeriod": ("eviction_max_pod_grace_period", _integer),
    "evictionPressureTransitionPeriod": ("eviction_pressure_transition_period", _duration),
    "localStorageCapacityIsolation": ("local_storage_capacity_isolation", _bool),
    **EVICTION_FIELDS,
    **RESERVED_FIELDS,  # systemReserved, kubeReserved, reservedSystemCPUs, enforce...
    "authentication": (SPREAD, lambda v: _block(v, _SECURITY_FIELDS, "authentication")),
    "authorization": (SPREAD, lambda v: _block(v, _SECURITY_FIELDS, "authorization")),
}


FIELD_OF_DEST: dict[str, str] = {
    dest: field
    for table in (FIELDS, _SECURITY_FIELDS, _CRASH_LOOP_FIELDS)
    for field, (dest, _) in table.items() if dest != SPREAD
}
"""Each setting's KubeletConfiguration field, by flag destination (nested ones dotted)."""
DEST_OF_FIELD = {field: dest for dest, field in FIELD_OF_DEST.items()}

DURATION_FIELDS = frozenset(
    field for table in (FIELDS, _SECURITY_FIELDS, _CRASH_LOOP_FIELDS)
    for field, (_, convert) in table.items() if convert is _duration)
"""The fields written as Go durations (``1m0s``); their settings are seconds."""

PATH_FIELDS = frozenset({"staticPodPath", "podLogsDir", "resolvConf", "tlsCertFile",
                         "tlsPrivateKeyFile"})


def config_error(path: str, field: str, rule: str) -> ConfigError:
    """The --config file's value of ``field`` (dotted when nested; "" for the file as a
    whole) breaks ``rule``: the one wording of an error about the file's values."""
    where = f"--config {path}: {field}" if field else f"--config {path}"
    return ConfigError(f"{where}: {rule}", file=path, field=field, rule=rule)


def load_kubelet_config(path: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The flag values the file sets, by flag destination, and the fields it ignores."""
    import yaml  # only with --config: a start without one need not import PyYAML

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise config_error(path, "", f"cannot read: {err}") from err
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise config_error(path, "", f"invalid YAML: {err}") from err
    if not isinstance(document, dict):
        raise config_error(path, "", "expected a KubeletConfiguration object")
    kind, version = document.get("kind"), document.get("apiVersion")
    if kind != KIND:
        raise config_error(path, "kind", f'expected "{KIND}", got {kind!r}')
    if version != API_VERSION:
        raise config_error(path, "apiVersion", f'expected "{API_VERSION}", got {version!r}')
    values: dict[str, Any] = {}
    ignored: list[str] = []
    broken: list[ConfigError] = []  # every field's error, reported together
    for field, value in document.items():
        if field in ("kind", "apiVersion"):
            continue
        if field not in FIELDS:
            ignored.append(field)
            continue
        dest, convert = FIELDS[field]
        try:
            converted = convert(value)
        except (TypeError, ValueError) as err:
            where, rule = field, str(err)
            if dest == SPREAD and rule.startswith(f"{field}."):  # a nested field's own error
                where, _, rule = rule.partition(": ")
            error = config_error(path, where, rule)
            error.__cause__ = err
            broken.append(error)
            continue
        if dest == SPREAD:
            values.update(converted)
            ca = values.get("client_ca_file")
            if ca and not os.path.isabs(ca):
                values["client_ca_file"] = os.path.join(
                    os.path.dirname(os.path.abspath(path)), ca)
            continue
        values[dest] = converted
        if field in PATH_FIELDS and values[dest] and not os.path.isabs(values[dest]):
            # Upstream resolves a config file's relative paths against the file's directory.
            values[dest] = os.path.join(os.path.dirname(os.path.abspath(path)), values[dest])
    if len(broken) == 1:
        raise broken[0]
    if broken:
        raise ConfigErrors(tuple(broken))
    return values, tuple(ignored)
