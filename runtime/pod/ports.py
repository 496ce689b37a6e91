"""Turning a handler's port (a number or a container port's name) into a number.

Lifecycle hooks (runtime.kuberuntime.hooks) and probes (runtime.prober.handlers) both name
ports this way; the rule lives here, below both, so neither package imports the other
for it.
"""

from __future__ import annotations

from runtime.pod.model import Container, IntOrString


def resolve_port(port: IntOrString, container: Container) -> int:
    """A numeric port, or the containerPort of the container's port with that name."""
    if isinstance(port, int):
        return port
    if port.isdigit():
        return int(port)
    for p in container.ports:
        if p.name == port:
            return p.container_port
    raise ValueError(f'container {container.name} has no port named "{port}"')
