"""KubeletConfiguration (kubelet.config.k8s.io/v1beta1) fields that kubelet-actors knows
but does not implement, each with the values that ask for nothing this node lacks.

Upstream's field list is k8s.io/kubelet/config/v1beta1/types.go (the newest stored
version: the 1.37 development line, with defaultPodSysctls, memoryReservationPolicy and
imagePullCredentialsVerificationPolicy). A field here is accepted when it is null (unset)
or one of its values in ``NOT_IMPLEMENTED``: upstream's default, and the zero value where
upstream's defaulting (pkg/kubelet/apis/config/v1beta1/defaults.go) turns a zero into
that default (kubeadm writes ``cpuManagerReconcilePeriod: 0s``); any other value is an
error naming the field, never a silent default. A field upstream documents as having no
effect any longer takes any value of its type (``ANY``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from actors.app.config.field_types import (
    any_list,
    any_map,
    boolean,
    duration,
    integer,
    number,
    pids_limit,
    quantity_text,
    string,
    strings,
    time_or_duration,
)

ANY = None
"""Any value of the field's type: upstream ignores the field."""

NOT_IMPLEMENTED: Mapping[str, tuple[Callable[[Any], Any], tuple[Any, ...] | None]] = {
    # field (dotted when nested): (its type, the values accepted; the first is upstream's default)
    "staticPodURLHeader": (any_map, ({},)),
    "tlsCurvePreferences": (any_list, ([],)),
    "registryPullQPS": (integer, (5,)),
    "registryBurst": (integer, (10, 0)),
    "imagePullCredentialsVerificationPolicy": (string, ("NeverVerifyPreloadedImages", "")),
    "preloadedImagesVerificationAllowlist": (strings, ([],)),
    "eventRecordQPS": (integer, (50,)),
    "eventBurst": (integer, (100, 0)),
    "enableDebuggingHandlers": (boolean, (True,)),
    "enableContentionProfiling": (boolean, (False,)),
    "oomScoreAdj": (integer, (-999,)),
    "streamingConnectionIdleTimeout": (duration, ANY),  # deprecated: no effect upstream
    "kubeletCgroups": (string, ("",)),
    "systemCgroups": (string, ("",)),
    "cpuManagerPolicy": (string, ("none", "", "None")),
    "singleProcessOOMKill": (boolean, ()),  # null only: upstream picks by the cgroup version
    "cpuManagerPolicyOptions": (any_map, ({},)),
    "cpuManagerReconcilePeriod": (duration, (10.0, 0.0)),
    "draManagerReconcilePeriod": (duration, (60.0, 0.0)),
    "memoryManagerPolicy": (string, ("None", "")),
    "topologyManagerPolicy": (string, ("none", "")),
    "topologyManagerScope": (string, ("container", "")),
    "topologyManagerPolicyOptions": (any_map, ({},)),
    "qosReserved": (any_map, ({},)),
    "hairpinMode": (string, ("promiscuous-bridge", "")),
    "podPidsLimit": (pids_limit, (-1,)),  # any negative is -1 upstream
    "cpuCFSQuota": (boolean, (True,)),
    "cpuCFSQuotaPeriod": (duration, (0.1,)),
    "maxOpenFiles": (integer, (1000000, 0)),
    "contentType": (string, ("application/vnd.kubernetes.protobuf", "")),
    "kubeAPIQPS": (integer, (50,)),
    "kubeAPIBurst": (integer, (100, 0)),
    "serializeImagePulls": (boolean, (True,)),
    "maxParallelImagePulls": (integer, ()),  # null only: no limit
    "mergeDefaultEvictionSettings": (boolean, (False,)),
    "podsPerCore": (integer, (0,)),
    "enableControllerAttachDetach": (boolean, (True,)),
    "protectKernelDefaults": (boolean, (False,)),
    "makeIPTablesUtilChains": (boolean, (True,)),
    "iptablesMasqueradeBit": (integer, ANY),  # deprecated: no effect upstream
    "iptablesDropBit": (integer, ANY),  # deprecated: no effect upstream
    "failSwapOn": (boolean, (True,)),
    "memorySwap.swapBehavior": (string, ("", "NoSwap")),
    "configMapAndSecretChangeDetectionStrategy": (string, ("Watch", "")),
    "showHiddenMetricsForVersion": (string, ("",)),
    "defaultPodSysctls": (any_map, ({},)),
    "volumePluginDir": (string, ("/usr/libexec/kubernetes/kubelet-plugins/volume/exec/", "")),
    "providerID": (string, ("",)),
    "kernelMemcgNotification": (boolean, (False,)),
    "logging.flushFrequency": (time_or_duration, (5.0, 0.0)),
    "logging.options.json.infoBufferSize": (quantity_text, ("0",)),
    "logging.options.json.splitStream": (boolean, (False,)),
    "logging.options.text.infoBufferSize": (quantity_text, ("0",)),
    "logging.options.text.splitStream": (boolean, (False,)),
    "enableSystemLogHandler": (boolean, (True,)),
    "enableSystemLogQuery": (boolean, (False,)),
    "reservedMemory": (any_list, ([],)),
    "enableProfilingHandler": (boolean, (True,)),
    "enableDebugFlagsHandler": (boolean, (True,)),
    "memoryThrottlingFactor": (number, (0.9,)),
    "memoryReservationPolicy": (string, ("None", "")),
    "tracing.endpoint": (string, ("",)),
    "tracing.samplingRatePerMillion": (integer, (0,)),
    "imageServiceEndpoint": (string, ("",)),
    "failCgroupV1": (boolean, (True,)),
    "userNamespaces.idsPerPod": (integer, (65536,)),
}

def shown(convert: Callable[[Any], Any], value: Any) -> str:
    """A converted value as the YAML file writes it."""
    import json

    from runtime.events.v1 import go_duration

    if convert in (duration, time_or_duration):
        return go_duration(value)
    if isinstance(value, bool):
        return str(value).lower()
    return json.dumps(value)


def refusal(field: str, value: Any) -> str | None:
    """Why ``value`` of not-implemented ``field`` is refused (None: accepted). Raises
    TypeError or ValueError when the value is not of the field's type."""
    convert, accepted = NOT_IMPLEMENTED[field]
    converted = convert(value)
    if accepted is ANY or converted in accepted:
        return None
    allowed = (f"only upstream's default, {shown(convert, accepted[0])}, is accepted"
               if accepted else "only null (unset) is accepted")
    return (f"kubelet-actors does not implement {field}: {allowed}, got "
            f"{shown(convert, converted)}")
