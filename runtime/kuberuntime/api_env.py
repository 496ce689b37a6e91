"""A container's environment from the API server (cluster mode): ConfigMaps, Secrets and
Services, as upstream's makeEnvironmentVariables (pkg/kubelet/kubelet_pods.go) and
pkg/kubelet/envvars/envvars.go make it.

- Service links (getServiceEnvVarMap): every Service with a cluster IP in the pod's
  namespace when ``enableServiceLinks``, plus the master service ``kubernetes`` of
  ``default`` always; ``FOO_SERVICE_HOST``, ``FOO_SERVICE_PORT``,
  ``FOO_SERVICE_PORT_<NAME>`` and the Docker link variables ``FOO_PORT``,
  ``FOO_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]``. Before the Service informer has listed,
  a container of a pod from the API server cannot be configured ("services have not yet
  been read at least once"); a static pod's gets the services known so far.
- ``ObjectEnv`` answers configMapKeyRef, secretKeyRef and envFrom (with ``prefix``) from
  the object source, each object read once per container; a missing object fails with
  the manager's NotFound (``configmap "x" not found``) unless optional, a missing key with
  ``couldn't find key k in ConfigMap ns/x``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime.errors import SyncError
from runtime.kuberuntime.api_volumes import APIVolumeError, fetch
from runtime.kuberuntime.object_source import ObjectSource
from runtime.pod.model import Pod

__all__ = ["ObjectEnv", "service_env", "service_env_vars"]

MASTER_SERVICES = frozenset({"kubernetes"})
MASTER_NAMESPACE = "default"


def _env_name(name: str) -> str:
    """makeEnvVariableName."""
    return name.upper().replace("-", "_")


def _ip_set(service: Mapping[str, Any]) -> bool:
    ip = str((service.get("spec") or {}).get("clusterIP") or "")
    return ip not in ("", "None")


def _host_port(ip: str, port: int) -> str:
    """net.JoinHostPort."""
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def service_env_vars(services: list[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """envvars.FromServices, in its order."""
    result: list[tuple[str, str]] = []
    for service in services:
        if not _ip_set(service):
            continue
        spec = service.get("spec") or {}
        ip = str(spec["clusterIP"])
        ports = list(spec.get("ports") or [])
        prefix = _env_name(str((service.get("metadata") or {}).get("name") or ""))
        result.append((prefix + "_SERVICE_HOST", ip))
        if not ports:
            continue
        name = prefix + "_SERVICE_PORT"
        result.append((name, str(int(ports[0].get("port") or 0))))
        for sp in ports:
            if sp.get("name"):
                result.append((f"{name}_{_env_name(str(sp['name']))}", str(int(sp["port"]))))
        for i, sp in enumerate(ports):
            protocol = str(sp.get("protocol") or "TCP")
            port = int(sp.get("port") or 0)
            url = f"{protocol.lower()}://{_host_port(ip, port)}"
            if i == 0:
                result.append((prefix + "_PORT", url))
            port_prefix = f"{prefix}_PORT_{port}_{protocol.upper()}"
            result += [(port_prefix, url), (port_prefix + "_PROTO", protocol.lower()),
                       (port_prefix + "_PORT", str(port)), (port_prefix + "_ADDR", ip)]
    return result


def service_env(pod: Pod, objects: ObjectSource) -> dict[str, str]:
    """getServiceEnvVarMap for ``pod``; SyncError while the informer has not listed."""
    answer = objects.services()
    if "items" not in answer and not pod.is_static:
        raise SyncError("CreateContainerConfigError", str(answer.get("error", "")))
    # A static pod does not wait for the Service informer (upstream: only pods from the API
    # server need it synced): it must start while the API server is away.
    enable = pod.spec.enable_service_links is not False
    chosen: dict[str, Mapping[str, Any]] = {}
    for service in answer.get("items", []):
        if not _ip_set(service):
            continue
        meta = service.get("metadata") or {}
        name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
        if namespace == MASTER_NAMESPACE and name in MASTER_SERVICES:
            chosen.setdefault(name, service)
        elif namespace == pod.metadata.namespace and enable:
            chosen[name] = service
    return dict(service_env_vars([chosen[k] for k in sorted(chosen)]))


class ObjectEnv:
    """The ConfigMaps and Secrets one container's env reads, each fetched once."""

    def __init__(self, pod: Pod, objects: ObjectSource) -> None:
        self._pod = pod
        self._objects = objects
        self._cache: dict[tuple[str, str], dict[str, bytes] | None] = {}

    def data(self, kind: str, name: str, optional: bool) -> dict[str, bytes] | None:
        """The object's data; None if missing and optional; SyncError otherwise."""
        key = (kind, name)
        if key not in self._cache:
            try:
                data = fetch(self._objects, kind, self._pod.metadata.namespace, name,
                             optional, env=True)
            except APIVolumeError as err:
                raise SyncError("CreateContainerConfigError", str(err)) from err
            self._cache[key] = data
        return self._cache[key]

    def env_from(self, kind: str, name: str, prefix: str, optional: bool
                 ) -> dict[str, str]:
        """envFrom: every key, prefixed."""
        data = self.data(kind, name, optional)
        if data is None:
            return {}
        return {prefix + k: v.decode(errors="replace") for k, v in data.items()}

    def key(self, kind: str, name: str, key: str, optional: bool) -> str | None:
        """configMapKeyRef / secretKeyRef: the value, or None to skip (optional)."""
        data = self.data(kind, name, optional)
        if data is None:
            return None
        if key not in data:
            if optional:
                return None
            what = "ConfigMap" if kind == "configmap" else "Secret"
            raise SyncError("CreateContainerConfigError",
                            f"couldn't find key {key} in {what} "
                            f"{self._pod.metadata.namespace}/{name}")
        return data[key].decode(errors="replace")
