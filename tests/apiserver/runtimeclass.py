"""RuntimeClass (node.k8s.io/v1) in the emulated API server: its validation, and the
RuntimeClass admission plug-in a pod goes through when it is created.

Upstream's validation (pkg/apis/node/validation) wants ``handler`` a DNS-1123 label that no
update changes. Upstream's admission (plugin/pkg/admission/runtimeclass) refuses a pod whose
``runtimeClassName`` names no RuntimeClass, copies the class's ``overhead.podFixed`` into
``spec.overhead`` (refusing a pod that sets another overhead, or one without a class that
defines it), and merges the class's ``scheduling`` into the pod: its nodeSelector (a
conflicting key refused) and its tolerations (those the pod lacks appended).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from runtime.pod.quantity import parse_quantity
from runtime.pod.validation import dns1123_label
from tests.apiserver import errors
from tests.apiserver.errors import APIError

KEY = "runtimeclasses.node.k8s.io"
"""Where the store keeps them (objects.resource_key)."""
GROUP = "node.k8s.io"


def validate(obj: dict[str, Any], old: dict[str, Any] | None = None) -> None:
    """upstream ValidateRuntimeClass (and ValidateRuntimeClassUpdate with ``old``)."""
    name = obj["metadata"]["name"]
    handler = obj.get("handler", "")
    causes: list[tuple[str, str, str]] = []
    if not isinstance(handler, str) or (why := dns1123_label(handler)):
        causes.append(("handler", "FieldValueInvalid",
                       f'Invalid value: "{handler}": {why if isinstance(handler, str) else ""}'))
    if old is not None and handler != old.get("handler"):
        causes.append(("handler", "FieldValueInvalid",
                       f'Invalid value: "{handler}": field is immutable'))
    if causes:
        raise errors.invalid("RuntimeClass", name, causes, GROUP)


def _forbidden(pod: dict[str, Any], why: str) -> APIError:
    """admission.NewForbidden on a pod."""
    name = pod["metadata"]["name"]
    return APIError(403, "Forbidden", f'pods "{name}" is forbidden: {why}',
                    {"name": name, "kind": "pods"})


def _quantities(resources: dict[str, Any]) -> dict[str, Decimal]:
    return {k: parse_quantity(str(v)) for k, v in resources.items()}


def admit(pod: dict[str, Any], runtime_class: dict[str, Any] | None) -> None:
    """The plug-in on a pod being created, with the RuntimeClass its runtimeClassName names
    (None when it names none, or one that does not exist)."""
    spec = pod["spec"]
    name = spec.get("runtimeClassName")
    if name and runtime_class is None:
        raise _forbidden(pod, f'pod rejected: RuntimeClass "{name}" not found')
    pod_fixed = ((runtime_class or {}).get("overhead") or {}).get("podFixed")
    if pod_fixed is not None:
        if spec.get("overhead") and _quantities(spec["overhead"]) != _quantities(pod_fixed):
            raise _forbidden(pod, "pod rejected: Pod's Overhead doesn't match RuntimeClass's "
                                  "defined Overhead")
        spec["overhead"] = dict(pod_fixed)
    elif spec.get("overhead"):
        raise _forbidden(pod, "pod rejected: Overhead set without corresponding RuntimeClass "
                              "defined Overhead")
    scheduling = (runtime_class or {}).get("scheduling") or {}
    selector = scheduling.get("nodeSelector") or {}
    if selector:
        merged = dict(spec.get("nodeSelector") or {})
        for key, value in selector.items():
            if key in merged and merged[key] != value:
                raise _forbidden(pod, f"conflict: runtimeClass.scheduling.nodeSelector[{key}] "
                                      f"= {value}; pod.spec.nodeSelector[{key}] = "
                                      f"{merged[key]}")
            merged[key] = value
        spec["nodeSelector"] = merged
    tolerations = spec.setdefault("tolerations", []) if scheduling.get("tolerations") else []
    for toleration in scheduling.get("tolerations") or []:
        if toleration not in tolerations:
            tolerations.append(dict(toleration))
