"""The emulated API server's defaulting of created objects, as upstream's kinds default them.

Pods (with the DefaultTolerationSeconds admission plug-in's tolerations), Namespaces,
Services (a cluster IP from the registry's range) and Secrets; other kinds are stored as
they come.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.apiserver.registry import Registry


def no_defaults(reg: Registry, obj: dict[str, Any]) -> None:
    return None


def _pod_defaults(reg: Registry, pod: dict[str, Any]) -> None:
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    # DefaultTolerationSeconds admission.
    tolerations = spec.setdefault("tolerations", [])
    for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == taint for t in tolerations):
            tolerations.append({"key": taint, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": 300})
    any_resources = False
    for c in [*spec.get("initContainers", []), *spec.get("containers", [])]:
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        image = c.get("image", "")
        latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
        c.setdefault("imagePullPolicy", "Always" if latest and "@" not in image
                     else "IfNotPresent")
        c.setdefault("resources", {})
        any_resources = any_resources or bool(c["resources"])
    status = pod.setdefault("status", {})
    status.clear()
    status["phase"] = "Pending"
    status["qosClass"] = "Burstable" if any_resources else "BestEffort"


def _namespace_defaults(reg: Registry, ns: dict[str, Any]) -> None:
    name = ns["metadata"]["name"]
    ns["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
    ns.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    ns["status"] = {"phase": "Active"}


def _service_defaults(reg: Registry, svc: dict[str, Any]) -> None:
    spec = svc.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName" and not spec.get("clusterIP"):
        reg._cluster_ips += 1
        n = reg._cluster_ips
        spec["clusterIP"] = f"10.96.{n // 256}.{n % 256}"
    if spec.get("clusterIP"):
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports", []):
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))
    svc["status"] = {"loadBalancer": {}}


def _secret_defaults(reg: Registry, secret: dict[str, Any]) -> None:
    secret.setdefault("type", "Opaque")


DEFAULTS: dict[str, Callable[[Registry, dict[str, Any]], None]] = {
    "Pod": _pod_defaults,
    "Namespace": _namespace_defaults,
    "Service": _service_defaults,
    "Secret": _secret_defaults,
}
