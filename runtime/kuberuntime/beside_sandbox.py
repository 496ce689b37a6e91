"""Work done on a thread beside RunPodSandbox, the slowest call of a pod's start.

``beside`` runs a call on the caller's thread while other work runs on a pool; the image
checks (runtime.kuberuntime.image_checks) are such work.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TypeVar

from runtime.cri.service import ImageService
from runtime.kuberuntime.image_checks import NO_IMAGES, PresentImages, check_images

T = TypeVar("T")


def beside(call: Callable[[], T], runtime: ImageService, images: tuple[str, ...],
           pool: Executor) -> tuple[T, PresentImages]:
    """``call()`` on this thread while ``images`` are checked on ``pool``; both results.

    The checks run in a copy of this thread's context, so a trace counts their calls as
    the caller's handler's; and they have ended when this returns, even when ``call``
    raises (a handler's calls all happen inside it). An error of a check other than the
    runtime's (CRIError) is raised here, as it would have been from the call itself.
    """
    if not images:
        return call(), NO_IMAGES
    checks = pool.submit(contextvars.copy_context().run, check_images, runtime, images)
    try:
        result = call()
    except BaseException:
        concurrent.futures.wait((checks,))
        raise
    return result, checks.result()
