"""``--config``: a KubeletConfiguration file (kubelet.config.k8s.io/v1beta1), decoded
strictly as upstream decodes it.

Every field of upstream's KubeletConfiguration is known: ``FIELDS`` (and the nested
tables) map the fields kubelet-actors implements to their flag destinations and
converters; actors.app.config.not_implemented lists the others, accepted only at
upstream's default. A field upstream does not have is an error in upstream's words
(``strict decoding error: unknown field "x"``), as is a key a file sets twice (the strict
decoder's ``key "x" already set in map``, actors.app.config.strict_yaml) and a field this
node does not implement set to another value. actors.app.config.config_dir merges
``--config-dir`` drop-ins over the file; flags given on the command line win over both,
as upstream.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from actors.app.config.eviction import CONFIG_FIELDS as EVICTION_FIELDS
from actors.app.config.field_types import boolean, duration, integer, string, strings
from actors.app.config.not_implemented import (
    NOT_IMPLEMENTED,
    refusal,
)
from actors.app.config.pflag_values import parse_vmodule
from actors.app.config.reserved import CONFIG_FIELDS as RESERVED_FIELDS
from actors.app.config.shutdown import by_pod_priority
from actors.app.config.strict_yaml import duplicate_rules
from actors.app.config.strict_yaml import load as load_strict
from runtime.errors import ConfigError, ConfigErrors
from runtime.pod.admission import sysctl_allowlist_error

if TYPE_CHECKING:
    from runtime.kubeapi.nodestatus import Taint

API_VERSION = "kubelet.config.k8s.io/v1beta1"
KIND = "KubeletConfiguration"


_string = string
_integer = integer
_duration = duration
_bool = boolean
_strings = strings


def _cgroup_driver(value: Any) -> str:
    if _string(value) not in ("cgroupfs", "systemd"):
        raise ValueError(f'"{value}": must be cgroupfs or systemd')
    return str(value)


def _feature_gates(value: Any) -> str:
    """featureGates: a map of gate to bool, as the --feature-gates text (checked there)."""
    if not isinstance(value, dict) or not all(isinstance(v, bool) for v in value.values()):
        raise TypeError("expected a map of feature gate names to true or false")
    return ",".join(f"{gate}={str(on).lower()}" for gate, on in value.items())


def _runtime_classes(value: Any) -> dict[str, str]:
    """runtimeClasses (kubelet-actors' own): a map of runtime class name to CRI handler,
    checked with --runtime-classes (actors.app.config.pod_settings.parse_runtime_classes)."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in value.items()):
        raise TypeError("expected a map of runtime class names to runtime handlers")
    return value


def _taints(value: Any) -> list[Taint]:
    """registerWithTaints: a list of core/v1 Taints (key, value, effect)."""
    from runtime.kubeapi.nodestatus import parse_taints  # the Node's code: cluster mode's

    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise TypeError("expected a list of taints (key, value, effect)")
    for i, taint in enumerate(value):
        if unknown := sorted(set(taint) - {"key", "value", "effect", "timeAdded"}):
            raise ValueError(f'[{i}]: strict decoding error: unknown field "{unknown[0]}"')
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


def _log_format(value: Any) -> str:
    if _string(value) not in ("text", "json"):
        raise ValueError(f'Unsupported value: "{value}": supported values: "json", "text"')
    return str(value)


def _verbosity(value: Any) -> int:
    if _integer(value) < 0 or value >= 2**32:
        raise ValueError(f"{value}: must be a verbosity from 0 to 4294967295")
    return int(value)


def _vmodule(value: Any) -> tuple[tuple[str, int], ...]:
    """logging.vmodule: a list of {filePattern, verbosity}, as --vmodule's pattern=N."""
    import argparse

    if not isinstance(value, list) or not all(
            isinstance(v, dict) and set(v) <= {"filePattern", "verbosity"} for v in value):
        raise TypeError("expected a list of {filePattern, verbosity}")
    try:
        return parse_vmodule(",".join(f"{_string(v.get('filePattern'))}="
                                      f"{_integer(v.get('verbosity', 0))}" for v in value))
    except argparse.ArgumentTypeError as err:
        raise ValueError(str(err)) from err


_LOGGING_FIELDS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "logging.format": ("log_format", _log_format),
    "logging.verbosity": ("verbosity", _verbosity),
    "logging.vmodule": ("vmodule", _vmodule),
}
"""component-base's LoggingConfiguration, as --logging-format, --v and --vmodule; its
flushFrequency and options are in not_implemented."""

OBJECTS = frozenset({
    "authentication", "authentication.x509", "authentication.webhook",
    "authentication.anonymous", "authorization", "authorization.webhook", "crashLoopBackOff",
    "logging", "logging.options", "logging.options.json", "logging.options.text",
    "memorySwap", "tracing", "userNamespaces",
})
"""The nested objects of KubeletConfiguration: their fields are decoded one by one."""

# KubeletConfiguration field -> (flag destination, converter)
FIELDS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "staticPodPath": ("pod_manifest_path", _string),
    "staticPodURL": ("manifest_url", _string),
    "containerRuntimeEndpoint": ("container_runtime_endpoint", _string),
    "podLogsDir": ("pod_logs_dir", _string),
    "enableServer": ("enable_server", _bool),
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
    "rotateCertificates": ("rotate_certificates", _bool),  # certs
    "serverTLSBootstrap": ("server_tls_bootstrap", _bool),  # certs
    "tlsPrivateKeyFile": ("tls_private_key_file", _string),
    "tlsMinVersion": ("tls_min_version", _string),
    "tlsCipherSuites": ("tls_cipher_suites", _strings),
    "imageGCHighThresholdPercent": ("image_gc_high_threshold", _integer),
    "imageGCLowThresholdPercent": ("image_gc_low_threshold", _integer),
    "imageMinimumGCAge": ("minimum_image_ttl_duration", _duration),
    "imageMaximumGCAge": ("image_maximum_gc_age", _duration),
    "evictionMaxPodGracePeriod": ("eviction_max_pod_grace_period", _integer),
    "evictionPressureTransitionPeriod": ("eviction_pressure_transition_period", _duration),
    "localStorageCapacityIsolation": ("local_storage_capacity_isolation", _bool),
    "shutdownGracePeriod": ("shutdown_grace_period", _duration),
    "shutdownGracePeriodCriticalPods": ("shutdown_grace_period_critical_pods", _duration),
    "shutdownGracePeriodByPodPriority": ("shutdown_grace_period_by_pod_priority", by_pod_priority),
    **EVICTION_FIELDS,
    "runOnce": ("runonce", _bool),
    **RESERVED_FIELDS,  # systemReserved, kubeReserved, reservedSystemCPUs, enforce...
}


LEAVES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    **FIELDS, **_SECURITY_FIELDS, **_CRASH_LOOP_FIELDS, **_LOGGING_FIELDS}
"""Every implemented field (nested ones dotted): (flag destination, converter)."""

FIELD_OF_DEST: dict[str, str] = {dest: field for field, (dest, _) in LEAVES.items()}
"""Each setting's KubeletConfiguration field, by flag destination (nested ones dotted)."""
DEST_OF_FIELD = {field: dest for dest, field in FIELD_OF_DEST.items()}

DURATION_FIELDS = frozenset(
    field for field, (_, convert) in LEAVES.items() if convert is _duration)
"""The fields written as Go durations (``1m0s``); their settings are seconds."""

PATH_FIELDS = frozenset({"staticPodPath", "podLogsDir", "resolvConf", "tlsCertFile",
                         "tlsPrivateKeyFile", "authentication.x509.clientCAFile"})
"""Paths upstream resolves against the directory of the --config file that names them
(pkg/kubelet/kubeletconfig/configfiles). A drop-in's are not resolved: upstream reads a
drop-in into JSON as written (LoadIntoJSON) and merges it after the file's paths were
made absolute, so a relative path there is relative to the kubelet's working directory,
as a flag's is."""

ZERO_IS_UNSET = frozenset({
    "syncFrequency", "fileCheckFrequency", "httpCheckFrequency", "address", "podLogsDir",
    "authentication.webhook.cacheTTL", "authorization.webhook.cacheAuthorizedTTL",
    "authorization.webhook.cacheUnauthorizedTTL", "nodeStatusUpdateFrequency",
    "nodeStatusReportFrequency", "nodeLeaseDurationSeconds", "imageMinimumGCAge",
    "volumeStatsAggPeriod", "runtimeRequestTimeout", "evictionPressureTransitionPeriod",
    "maxPods", "containerLogMaxSize", "cgroupDriver", "healthzBindAddress", "logging.format",
    "port", "authorization.mode",
})
"""Fields whose zero value (``0s``, ``0``, ``""``) upstream's defaulting
(pkg/kubelet/apis/config/v1beta1/defaults.go SetDefaults_KubeletConfiguration) replaces
with the default, as kubeadm's generated file relies on: in the --config file such a value
leaves the setting at its default here too. Upstream does not default a drop-in (it reads
one into JSON, not into the defaulted type), so there a zero is the value it says. Every
other implemented field is a pointer upstream (nil is its default, 0 a value: healthzPort,
readOnlyPort, nodeStatusMaxImages, ...) or has no default; containerRuntimeEndpoint's
``""`` is upstream's containerd socket and, here, the embedded containerd."""

CONFIG = "--config"
CONFIG_DIR = "--config-dir"


def config_error(path: str, field: str, rule: str, flag: str = CONFIG) -> ConfigError:
    """The value of ``field`` (dotted when nested; "" for the file as a whole) in the
    --config file (or, ``flag`` --config-dir, a drop-in) breaks ``rule``: the one wording
    of an error about a file's values."""
    where = f"{flag} {path}: {field}" if field else f"{flag} {path}"
    return ConfigError(f"{where}: {rule}", file=path, field=field, rule=rule)


def read_document(path: str, flag: str = CONFIG) -> dict[str, Any]:
    """The KubeletConfiguration document of ``path`` (the --config file or a drop-in),
    its kind and apiVersion checked."""
    import yaml  # only with --config: a start without one need not import PyYAML

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise config_error(path, "", f"cannot read: {err}", flag) from err
    try:
        strict = load_strict(text)
    except yaml.YAMLError as err:
        raise config_error(path, "", f"invalid YAML: {err}", flag) from err
    document = strict.document
    if not isinstance(document, dict):
        raise config_error(path, "", "expected a KubeletConfiguration object", flag)
    if repeated := duplicate_rules(strict):
        # the strict decoder's errors: the repeated keys', then the unknown fields'
        unknown = [(f, f'unknown field "{f}"') for f in _unknown_fields(document)]
        raise strict_decoding_error(path, [*repeated, *unknown], flag)
    kind, version = document.get("kind"), document.get("apiVersion")
    if kind != KIND:
        raise config_error(path, "kind", f'expected "{KIND}", got {kind!r}', flag)
    if version != API_VERSION:
        raise config_error(path, "apiVersion", f'expected "{API_VERSION}", got {version!r}',
                           flag)
    return document


def _unknown_fields(document: dict[str, Any], prefix: str = "") -> list[str]:
    """The fields of ``document`` upstream's KubeletConfiguration does not have, dotted,
    as upstream's strict decoder names them."""
    unknown: list[str] = []
    for key, value in document.items():
        field = f"{prefix}{key}"
        if not prefix and key in ("kind", "apiVersion"):
            continue
        if field in OBJECTS:
            if isinstance(value, dict):
                unknown += _unknown_fields(value, f"{field}.")
        elif not (field in LEAVES or field in NOT_IMPLEMENTED):
            unknown.append(field)
    return unknown


def strict_decoding_error(path: str, problems: list[tuple[str, str]],
                          flag: str = CONFIG) -> ConfigError:
    """Upstream's strict decoding error for ``problems`` ((field, the decoder's words):
    fields its KubeletConfiguration does not have, keys set twice), in the words the
    kubelet prints (cmd/kubelet/app/server.go: the --config file's, or a drop-in's)."""
    rule = "strict decoding error: " + ", ".join(words for _, words in problems)
    if flag == CONFIG_DIR:
        message = (f"failed to load kubelet dropin file, path: {path}, error: failed to "
                   f"decode: {rule}")
    else:
        message = f"failed to load Kubelet config file {path}, error failed to decode: {rule}"
    return ConfigError(message, file=path, field=problems[0][0], rule=rule)


def decode(document: dict[str, Any], path: str, flag: str = CONFIG) -> dict[str, Any]:
    """The flag values a KubeletConfiguration document sets, by flag destination, decoded
    strictly: an unknown field, a value of the wrong type and a not-implemented field at
    a value other than upstream's default are errors naming ``path`` and the field (every
    field's error reported together). A null field is unset."""
    if unknown := _unknown_fields(document):
        raise strict_decoding_error(path, [(f, f'unknown field "{f}"') for f in unknown],
                                    flag)
    values: dict[str, Any] = {}
    broken: list[ConfigError] = []
    base = os.path.dirname(os.path.abspath(path))
    defaulted = flag == CONFIG  # upstream defaults the --config file, not a drop-in

    def walk(obj: dict[str, Any], prefix: str) -> None:
        for key, value in obj.items():
            field = f"{prefix}{key}"
            if (not prefix and key in ("kind", "apiVersion")) or value is None:
                continue
            try:
                if field in OBJECTS:
                    if not isinstance(value, dict):
                        raise TypeError(f"expected an object, got {type(value).__name__}")
                    walk(value, f"{field}.")
                elif field in NOT_IMPLEMENTED:
                    if rule := refusal(field, value):
                        broken.append(config_error(path, field, rule, flag))
                else:
                    dest, convert = LEAVES[field]
                    zero_is_default = defaulted and field in ZERO_IS_UNSET
                    if zero_is_default and value == "":
                        continue
                    converted = convert(value)
                    if zero_is_default and not isinstance(converted, bool) \
                            and converted in (0, ""):
                        continue
                    if defaulted and field in PATH_FIELDS and converted \
                            and not os.path.isabs(converted):
                        # Upstream resolves the file's relative paths against its directory.
                        converted = os.path.join(base, converted)
                    values[dest] = converted
            except (TypeError, ValueError) as err:
                error = config_error(path, field, str(err), flag)
                error.__cause__ = err
                broken.append(error)

    walk(document, "")
    update = values.get("node_status_update_frequency", 0)
    if defaulted and "node_status_report_frequency" not in values and update > 0:
        # Upstream's defaulting: an unset report frequency follows an update frequency the
        # file sets (for backward compatibility), else it is 5m. (A negative one is refused
        # by its own check; a second error about the copy would say nothing new.)
        values["node_status_report_frequency"] = update
    if len(broken) == 1:
        raise broken[0]
    if broken:
        raise ConfigErrors(tuple(broken))
    return values


def load_kubelet_config(path: str) -> dict[str, Any]:
    """The flag values the --config file sets, by flag destination."""
    return decode(read_document(path), path)
