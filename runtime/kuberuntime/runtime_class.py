"""A pod's ``spec.runtimeClassName`` -> the CRI runtime handler its sandbox runs on
(upstream pkg/kubelet/runtimeclass, Manager.LookupRuntimeHandler).

No name (or "") is the runtime's default handler (""). Any other name is looked up:

- in cluster mode, among the API server's RuntimeClass objects (node.k8s.io/v1, their
  ``handler``), which the kubelet keeps in an informer (ObjectSource.runtime_class;
  runtime.kubeapi.objects);
- standalone, where upstream's kubelet has no RuntimeClass manager and would run the pod
  on the default handler, in the node's own table (NodeSettings.runtime_classes, from
  ``--runtime-classes NAME=HANDLER,...`` or the config file's ``runtimeClasses``): a name
  never silently becomes the default runc.

A name neither knows fails the sandbox before anything of it is made, with upstream's
NotFound error (``runtimeclass.node.k8s.io "x" not found``): the runtime manager reports it
as upstream's FailedCreatePodSandBox event, and the pod stays Pending in
ContainerCreating until the class appears (the worker's back-off retries).

What else a RuntimeClass says is not the kubelet's: its ``overhead.podFixed`` is copied
into ``pod.spec.overhead`` by the API server's RuntimeClass admission (the kubelet reads
that: runtime.cm.aggregate sizes the pod cgroup with it, eviction ranks by it, and the
sandbox config carries it to the runtime: runtime.cm.container_resources), and its
``scheduling`` (nodeSelector, tolerations) is merged into the pod for the scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping

from runtime.kuberuntime.object_source import ObjectSource

__all__ = ["RESOURCE", "RuntimeClassError", "lookup_runtime_handler", "not_found"]

RESOURCE = "runtimeclass.node.k8s.io"
"""The group-resource upstream's lister names in its NotFound error."""


class RuntimeClassError(Exception):
    """The pod's runtime class cannot be resolved; ``str()`` is upstream's error text."""


def not_found(name: str) -> RuntimeClassError:
    """upstream errors.NewNotFound(node.Resource("runtimeclass"), name)."""
    return RuntimeClassError(f'{RESOURCE} "{name}" not found')


def lookup_runtime_handler(name: str | None, table: Mapping[str, str],
                           objects: ObjectSource | None) -> str:
    """The handler of the runtime class ``name``: from ``objects`` (the API server's
    RuntimeClasses) in cluster mode, else from ``table`` (the node's own). Raises
    RuntimeClassError with upstream's words when it cannot be had."""
    if not name:
        return ""  # upstream: the default RuntimeClass always resolves to ""
    if objects is None:
        handler = table.get(name)
        if handler is None:
            raise not_found(name)
        return handler
    answer = objects.runtime_class(name)
    if answer.get("notFound"):
        raise not_found(name)
    if "error" in answer:
        raise RuntimeClassError(f"failed to lookup RuntimeClass {name}: {answer['error']}")
    return str(answer["object"].get("handler", ""))
