"""``/configz``: the effective KubeletConfiguration, as upstream's kubelet serves it.

Upstream registers its configuration with component-base's configz under the name
``kubeletconfig``, converted to kubelet.config.k8s.io/v1beta1 with the kind and apiVersion
stamped (cmd/kubelet/app/server.go convertToVersionedKubeletConfig), after the flags, the
--config file and the defaults are merged; ``/configz`` answers ``json.Marshal`` of
``{"kubeletconfig": <that object>}``. This module renders the same object from the merged
flags, with the fields this kubelet has, in upstream's field names, order and encodings:
durations as Go prints them (``1m0s``), a field tagged ``omitempty`` left out when empty
(pointer fields and structs are always there), map keys sorted, ``<``, ``>`` and ``&``
escaped as Go's encoder escapes them. Fields this kubelet has no setting for are absent,
not invented.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from actors.app.config.feature_gates import CRASH_LOOP_BACKOFF_MAX, enabled
from actors.app.config.kubelet_config import API_VERSION, KIND
from runtime.events.v1 import go_duration
from runtime.eviction.api import format_quantity

if TYPE_CHECKING:
    from actors.app.config.flags import KubeletFlags

CONFIGZ_NAME = "kubeletconfig"
"""The name the kubelet registers its configuration under (the answer's one key)."""

_GO_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
               ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def _some(out: dict[str, Any], key: str, value: Any) -> None:
    """Go's ``omitempty``: the field only when it is not its type's zero value."""
    if value:
        out[key] = value


def _eviction(flags: KubeletFlags) -> dict[str, Any]:
    """evictionHard ... evictionMinimumReclaim, in upstream's field order."""
    config = flags.eviction
    hard = {t.signal: str(t.value) for t in config.thresholds if t.hard}
    soft = {t.signal: str(t.value) for t in config.thresholds if not t.hard}
    grace = {t.signal: go_duration(t.grace_period) for t in config.thresholds if not t.hard}
    reclaim = {t.signal: str(t.min_reclaim) for t in config.thresholds
               if t.min_reclaim is not None}
    out: dict[str, Any] = {}
    _some(out, "evictionHard", dict(sorted(hard.items())))
    _some(out, "evictionSoft", dict(sorted(soft.items())))
    _some(out, "evictionSoftGracePeriod", dict(sorted(grace.items())))
    out["evictionPressureTransitionPeriod"] = go_duration(config.pressure_transition_period)
    _some(out, "evictionMaxPodGracePeriod", config.max_pod_grace_period)
    _some(out, "evictionMinimumReclaim", dict(sorted(reclaim.items())))
    return out


def kubelet_configuration(flags: KubeletFlags, *, runtime_endpoint: str = "",
                          tls_files: tuple[str, str] = ("", "")) -> dict[str, Any]:
    """The v1beta1 KubeletConfiguration of ``flags`` (merged and checked), kind and
    apiVersion first. ``runtime_endpoint`` is the CRI socket in use (the embedded
    containerd's when --container-runtime-endpoint is empty); ``tls_files`` the main
    port's serving pair (the self-signed one's paths when none was given), as upstream
    records them before registering the configuration."""
    gc = flags.garbage_collection.images
    cert, key = tls_files
    out: dict[str, Any] = {"kind": KIND, "apiVersion": API_VERSION,
                           "enableServer": flags.port != 0}
    _some(out, "staticPodPath", flags.pod_manifest_path)
    _some(out, "podLogsDir", flags.pod_logs_dir)
    out["syncFrequency"] = go_duration(flags.sync_frequency)
    out["fileCheckFrequency"] = go_duration(flags.file_check_frequency)
    out["httpCheckFrequency"] = go_duration(flags.http_check_frequency)
    _some(out, "staticPodURL", flags.manifest_url)
    _some(out, "address", flags.address)
    _some(out, "port", flags.port)
    _some(out, "readOnlyPort", flags.read_only_port)
    _some(out, "tlsCertFile", cert or flags.tls_cert_file)
    _some(out, "tlsPrivateKeyFile", key or flags.tls_private_key_file)
    _some(out, "tlsCipherSuites", list(flags.tls_cipher_suites))
    _some(out, "tlsMinVersion", flags.tls_min_version)
    x509: dict[str, Any] = {}
    _some(x509, "clientCAFile", flags.client_ca_file)
    out["authentication"] = {
        "x509": x509,
        "webhook": {"enabled": flags.authentication_token_webhook,
                    "cacheTTL": go_duration(flags.authentication_token_webhook_cache_ttl)},
        "anonymous": {"enabled": flags.anonymous_auth},
    }
    out["authorization"] = {
        "mode": flags.authorization_mode,
        "webhook": {
            "cacheAuthorizedTTL": go_duration(flags.authorization_webhook_cache_authorized_ttl),
            "cacheUnauthorizedTTL": go_duration(
                flags.authorization_webhook_cache_unauthorized_ttl)},
    }
    out["healthzPort"] = flags.healthz_port
    _some(out, "healthzBindAddress", flags.healthz_bind_address)
    _some(out, "clusterDomain", flags.cluster_domain)
    _some(out, "clusterDNS", list(flags.cluster_dns))
    out["nodeStatusUpdateFrequency"] = go_duration(flags.node_status_update_frequency)
    out["nodeStatusReportFrequency"] = go_duration(flags.node_status_report_frequency)
    _some(out, "nodeLeaseDurationSeconds", flags.node_lease_duration_seconds)
    out["imageMinimumGCAge"] = go_duration(gc.min_age)
    out["imageMaximumGCAge"] = go_duration(gc.max_age)
    out["imageGCHighThresholdPercent"] = gc.high_threshold
    out["imageGCLowThresholdPercent"] = gc.low_threshold
    out["volumeStatsAggPeriod"] = go_duration(flags.volume_stats_agg_period)
    _some(out, "cgroupRoot", flags.cgroup_root)
    out["cgroupsPerQOS"] = flags.cgroups_per_qos
    _some(out, "cgroupDriver", flags.cgroup_driver)
    out["runtimeRequestTimeout"] = go_duration(flags.runtime_request_timeout)
    _some(out, "maxPods", flags.max_pods)
    _some(out, "podCIDR", flags.pod_cidr)
    out["resolvConf"] = flags.resolv_conf
    _some(out, "runOnce", flags.runonce)
    out["nodeStatusMaxImages"] = flags.node_status_max_images
    out.update(_eviction(flags))
    _some(out, "featureGates", dict(sorted(flags.feature_gates)))
    out["containerLogMaxSize"] = format_quantity(flags.container_log_max_size)
    out["containerLogMaxFiles"] = flags.container_log_max_files
    out["containerLogMaxWorkers"] = flags.container_log_max_workers
    out["containerLogMonitorInterval"] = go_duration(flags.container_log_monitor_interval)
    _some(out, "allowedUnsafeSysctls", list(flags.allowed_unsafe_sysctls))
    # component-base's LoggingConfiguration; flushFrequency and the buffers are upstream's
    # defaults, which are all this node accepts.
    logging: dict[str, Any] = {"format": flags.log_format, "flushFrequency": "5s"}
    _some(logging, "vmodule", [{"filePattern": p, "verbosity": v} for p, v in flags.vmodule])
    logging["verbosity"] = flags.verbosity
    logging["options"] = {"text": {"infoBufferSize": "0"}, "json": {"infoBufferSize": "0"}}
    out["logging"] = logging
    # A struct: never omitted; its one field is set only behind its gate.
    out["crashLoopBackOff"] = (
        {"maxContainerRestartPeriod": go_duration(flags.max_container_restart_period)}
        if enabled(flags.feature_gates, CRASH_LOOP_BACKOFF_MAX) else {})
    # Graceful node shutdown: metav1.Durations (never omitted) and the list (omitempty).
    out["shutdownGracePeriod"] = go_duration(flags.shutdown_grace_period)
    out["shutdownGracePeriodCriticalPods"] = go_duration(
        flags.shutdown_grace_period_critical_pods)
    _some(out, "shutdownGracePeriodByPodPriority", [
        {"priority": p.priority, "shutdownGracePeriodSeconds": p.shutdown_grace_period_seconds}
        for p in flags.shutdown_grace_period_by_pod_priority])
    out["seccompDefault"] = flags.seccomp_default
    _some(out, "registerWithTaints", [
        {"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect}
        for t in flags.register_with_taints])
    out["registerNode"] = flags.register_node
    # certs: omitempty upstream, as both are false by default
    _some(out, "rotateCertificates", flags.rotate_certificates)
    _some(out, "serverTLSBootstrap", flags.server_tls_bootstrap)
    out["containerRuntimeEndpoint"] = runtime_endpoint or flags.container_runtime_endpoint
    return out


def configz_body(config: dict[str, Any]) -> bytes:
    """What ``/configz`` answers: ``{"kubeletconfig": config}`` encoded as Go's
    json.Marshal encodes it (compact, HTML-significant characters escaped)."""
    body = msgspec.json.encode({CONFIGZ_NAME: config})
    for raw, escaped in _GO_ESCAPES:  # only ever inside strings: JSON's syntax has none
        body = body.replace(raw, escaped)
    return body
