"""The runtime's conditions as upstream's kubelet words them (kubelet.go updateRuntimeUp).

NetworkReady false or absent is the network error, RuntimeReady false or absent the runtime
error, each worded with kubecontainer.RuntimeCondition's String(). Here, below the API
client, so the runtime monitor of a standalone kubelet reads them without loading it.
"""

from __future__ import annotations

from runtime.cri.types import RuntimeCondition, RuntimeStatus

__all__ = ["condition_errors"]


def _condition_text(kind: str, condition: RuntimeCondition | None) -> str:
    """``%v`` of a *RuntimeCondition: its String(), or ``<nil>`` when absent."""
    if condition is None:
        return "<nil>"
    return (f"{kind}={'true' if condition.status else 'false'} reason:{condition.reason} "
            f"message:{condition.message}")


def condition_errors(status: RuntimeStatus) -> tuple[str | None, str | None]:
    """updateRuntimeUp's verdicts from a CRI Status answer: (the runtime error, the
    network error), None where the condition is true."""
    network = status.condition("NetworkReady")
    runtime = status.condition("RuntimeReady")
    network_err = None if network is not None and network.status else \
        f"container runtime network not ready: {_condition_text('NetworkReady', network)}"
    runtime_err = None if runtime is not None and runtime.status else \
        f"container runtime not ready: {_condition_text('RuntimeReady', runtime)}"
    return runtime_err, network_err
