"""The hand-written behaviour of the generated Pod and Container (runtime.pod.generated).

They are mixins so the generated Structs themselves carry it: a Container decoded inside
a PodSpec is the class with ``is_restartable_init``. Import the classes from
runtime.pod.model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.pod.generated import Container, ObjectMeta, PodSpec


class PodMethods:
    __slots__ = ()
    if TYPE_CHECKING:
        metadata: ObjectMeta
        spec: PodSpec

    @property
    def uid(self) -> str:
        return self.metadata.uid

    @property
    def full_name(self) -> str:
        """``name_namespace``, upstream's key for a pod's identity across UIDs."""
        return f"{self.metadata.name}_{self.metadata.namespace}"

    @property
    def is_static(self) -> bool:
        source = self.metadata.annotations.get("kubernetes.io/config.source", "")
        return source not in ("", "api")

    def all_containers(self) -> tuple[Container, ...]:
        return self.spec.init_containers + self.spec.containers

    def container(self, name: str) -> Container | None:
        return next((c for c in self.all_containers() if c.name == name), None)


class ContainerMethods:
    __slots__ = ()
    if TYPE_CHECKING:
        restart_policy: str | None

    @property
    def is_restartable_init(self) -> bool:
        """An init container with restartPolicy Always (a sidecar) keeps running."""
        return self.restart_policy == "Always"
