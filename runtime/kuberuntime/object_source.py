"""What the runtime manager reads from the API server in cluster mode: ConfigMaps,
Secrets, Services, service account tokens and RuntimeClasses, as one service
(``ObjectSource``).

Declared as a Protocol, like the CRI, so the daemon wraps it with the same interceptors:
a trace records every answer and a replay gives the recorded one back. Answers are plain
JSON (``Answer``): the object, ``notFound``, or an ``error`` message; nothing raises for
an object the API lacks. runtime.kubeapi.objects implements it over an API server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["OBJECTS_TARGET", "Answer", "ObjectSource", "found", "not_found"]

OBJECTS_TARGET = "kubeapi"
"""The service's name in traces (the ``target`` of its recorded calls)."""

Answer = dict[str, Any]
"""``{"object": {...}}``, ``{"notFound": True}`` or ``{"error": "..."}``."""

def found(obj: Mapping[str, Any]) -> Answer:
    return {"object": dict(obj)}


def not_found() -> Answer:
    return {"notFound": True}


class ObjectSource(Protocol):
    """What the runtime manager reads from the API server (every method's answer is an
    input a trace records)."""

    def register_pod(self, uid: str, namespace: str, config_maps: tuple[str, ...],
                     secrets: tuple[str, ...]) -> None:
        """The pod references these objects now (replacing what it referenced before)."""
        ...

    def unregister_pod(self, uid: str) -> None:
        """The pod is gone: its references end."""
        ...

    def get(self, kind: str, namespace: str, name: str) -> Answer:
        """``kind``: ``configmap`` or ``secret``."""
        ...

    def services(self) -> Answer:
        """``{"items": [...]}`` once the Service informer has listed, else an error."""
        ...

    def token(self, namespace: str, service_account: str, pod_name: str, pod_uid: str,
              audience: str, expiration_seconds: int) -> Answer:
        """``{"token": ..., "expirationTimestamp": ...}`` bound to the pod, or an error."""
        ...

    def runtime_class(self, name: str) -> Answer:
        """The RuntimeClass ``name`` (node.k8s.io/v1, cluster-scoped) as the RuntimeClass
        informer holds it, ``notFound``, or an error (runtime.kuberuntime.runtime_class)."""
        ...
