"""``spec.hostUsers: false``: may this node give the pod its own user namespace?

Upstream's UsernsManager.GetOrCreateUserNamespaceMappings (pkg/kubelet/userns) is asked
for the sandbox's user namespace when the sandbox config is made: a pod that leaves
hostUsers unset or true shares the node's; one that sets it false gets a range of IDs of
its own, but only where the runtime handler the pod runs on reports the user_namespaces
feature in CRI Status (upstream's HandlerSupportsUserNamespaces). Otherwise the sandbox
config fails with upstream's error, the sandbox is never made (FailedCreatePodSandBox)
and no container of the pod runs: the pod is never run in the node's user namespace
instead.

This kubelet allocates no ID ranges, so even a handler that supports user namespaces
cannot be given a pod that asks for one: such a pod is refused too, saying so, rather
than run without it.
"""

from __future__ import annotations

from collections.abc import Sequence

from runtime.cri.types import RuntimeHandler
from runtime.pod.model import Pod

__all__ = ["UserNamespaceError", "user_namespace_error"]


class UserNamespaceError(Exception):
    """The pod's user namespace cannot be had; the message is upstream's error."""


def _handler_supports(handlers: Sequence[RuntimeHandler] | None, name: str
                      ) -> tuple[bool, str]:
    """Upstream HandlerSupportsUserNamespaces: (supported, why not known)."""
    if handlers is None:
        return False, "runtime handlers are not set"
    for handler in handlers:
        if handler.name == name:
            return handler.features.user_namespaces, ""
    return False, f'the handler "{name}" is not known'


def user_namespace_error(pod: Pod, handlers: Sequence[RuntimeHandler] | None,
                         runtime_handler: str = "") -> str | None:
    """None when ``pod`` may run on ``runtime_handler``, else upstream's error for its
    ``spec.hostUsers: false``. ``handlers`` are those the runtime's Status reports (None
    before it was asked)."""
    if pod.spec.host_users is not False:
        return None
    supported, unknown = _handler_supports(handlers, runtime_handler)
    if not supported:
        message = "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
        if runtime_handler:
            message = (f"can't set `spec.hostUsers: false`, RuntimeClass handler "
                       f'"{runtime_handler}" does not support user namespaces')
        return f"{message}: {unknown}" if unknown else message
    # Not upstream's: upstream would allocate the pod a range of IDs here, which this
    # kubelet does not do; the pod is refused rather than run in the node's namespace.
    return ("can't set `spec.hostUsers: false`: this kubelet does not allocate user "
            "namespace ID mappings")
