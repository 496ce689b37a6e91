"""Work done on a thread beside RunPodSandbox, the slowest call of a pod's start.

RunPodSandbox (a network namespace, the pause container's shim) takes some 100 ms; the
sync's thread only waits on it. What a container start needs that neither the sandbox nor
the pod's IP decide is done meanwhile on a pool thread: the images' statuses
(runtime.kuberuntime.image_checks) and the files the first containers' starts make
(ContainerLifecycle.prepare_start). Whatever they decide still happens in the container
start, after the sandbox exists, in upstream's order.

The side work sends no message and reads no clock (a trace orders those per handler); the
runtime calls it makes are matched by content on replay, as parallel kills' are.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import TypeVar

from runtime.kuberuntime.actions import PodActions
from runtime.pod.model import Container, Pod

T = TypeVar("T")
S = TypeVar("S")

SIDE_THREADS = 2
"""Threads for side work (of pods made at once; each sync's is a short ImageStatus call
and a few files)."""


def side_pool() -> Executor:
    """Where a kubelet's side work runs: a few threads, kept (a thread made for each sync
    would cost more CPU than the work it runs)."""
    return ThreadPoolExecutor(SIDE_THREADS, thread_name_prefix="beside-sandbox")


def beside(call: Callable[[], T], side: Callable[[], S], pool: Executor) -> tuple[T, S]:
    """``call()`` on this thread while ``side()`` runs on ``pool``; both results.

    The side work runs in a copy of this thread's context, so a trace counts its calls as
    the caller's handler's; and it has ended when this returns, even when ``call`` raises
    (a handler's calls all happen inside it). An error of the side work is raised here, as
    it would have been from the call itself.
    """
    work = pool.submit(contextvars.copy_context().run, side)
    try:
        result = call()
    except BaseException:
        concurrent.futures.wait((work,))
        raise
    return result, work.result()


def first_starts(pod: Pod, plan: PodActions) -> tuple[Container, ...]:
    """The containers a plan that makes the sandbox starts right after it: its first init
    container, else its app containers (a later init container waits on the one before,
    which may fail)."""
    if not plan.create_sandbox:
        return ()
    if plan.init_containers_to_start:
        return (pod.spec.init_containers[plan.init_containers_to_start[0]],)
    return tuple(pod.spec.containers[i] for i in plan.containers_to_start)
