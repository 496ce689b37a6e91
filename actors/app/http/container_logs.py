"""``/containerLogs/{namespace}/{pod}/{container}``: a container's log, as upstream's
kubelet serves it (pkg/kubelet/server getContainerLogs, kubelet_pods
GetKubeletContainerLogs, kuberuntime GetContainerLogs).

Query: follow, previous, timestamps, tailLines (or the legacy ``tail``), limitBytes,
sinceSeconds, sinceTime (RFC3339), stream (Stdout, Stderr, All: the newer API's split
streams). A value that does not decode is 400, one that breaks PodLogOptions' rules 422
(see log_request). An unknown pod or container is 404 with upstream's words; a container
with no log to show (never started, no previous instance) is 400 with upstream's reason.
The instance comes from the pod's v1 status, its log path from the runtime
(ContainerStatus), as upstream; the log is that file's rotated files, oldest first, then
the file (beyond upstream, which reads the file alone: runtime.kuberuntime.log_reader),
so a tail right after a rotation still has lines. A follow ends when that instance stops
running, when the client goes away (actors.app.http.disconnect) or when the server stops.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Iterator

import falcon
from loguru import logger

from actors.app.http.disconnect import client_gone
from actors.app.http.log_request import (
    NOT_FOUND,
    LogRequestError,
    log_container_id,
    parse_log_query,
)
from actors.app.http.view import KubeletView
from runtime.cri.types import ContainerState
from runtime.ids import ContainerID
from runtime.kuberuntime.log_reader import read_log

_TEXT = "text/plain; charset=utf-8"


class LogHTTPError(falcon.HTTPError):
    """A refused log request: the code and upstream's message (a v1 Status body)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(falcon.code_to_http_status(code), description=message)


class ContainerLogsResource:
    """The endpoint over a KubeletView (see the module)."""

    def __init__(self, view: KubeletView, stopping: threading.Event | None = None) -> None:
        self._view = view
        # Set when the server stops: a followed log ends then, not only when its
        # container stops (a stream has no other way to learn that its server is going).
        self._stopping = stopping or threading.Event()

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, namespace: str, pod: str,
        container: str,
    ) -> None:
        query = urllib.parse.parse_qs(req.query_string, keep_blank_values=True)
        try:
            request = parse_log_query(query, pod, time.time_ns())
            container_id = self._container_id(namespace, pod, container, request.previous)
        except LogRequestError as err:
            raise LogHTTPError(err.code, err.message) from None
        cid = ContainerID(container_id.partition("://")[2] or container_id)
        status = self._view.container_status(cid)
        if status is None or not status.log_path:
            raise LogHTTPError(400, f"unable to retrieve container logs for {container_id}")

        def running() -> bool:
            current = self._view.container_status(cid)
            return current is not None and current.state == ContainerState.RUNNING

        disconnected = client_gone(req.env)
        try:
            chunks = read_log(status.log_path, request.options, running,
                              lambda: self._stopping.is_set() or disconnected())
        except OSError as err:
            raise LogHTTPError(400, f'failed to open log file "{status.log_path}": '
                               f"{err.strerror or err}") from err
        logger.debug("container logs: pod {}/{} container {} ({}), follow {}", namespace,
                     pod, container, cid, request.options.follow)
        resp.content_type = _TEXT
        resp.stream = _closing(chunks)

    on_head = on_get

    def _container_id(self, namespace: str, pod: str, container: str, previous: bool) -> str:
        """404 for a pod the kubelet does not have or a container not in its spec, as
        upstream words them; else the instance (log_container_id)."""
        for candidate, status in self._view.pods():
            meta = candidate.metadata
            if meta.namespace == namespace and meta.name == pod:
                spec = candidate.spec
                names = {c.name for c in (*spec.init_containers, *spec.containers)}
                names.update(e.name for e in spec.ephemeral_containers)
                if container not in names:
                    raise LogRequestError(
                        NOT_FOUND, f'container "{container}" not found in pod "{pod}"')
                return log_container_id(pod, status, container, previous)
        raise LogRequestError(NOT_FOUND, f'pod "{pod}" does not exist')


def _closing(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The chunks, with the reader closed (its file and watch) however the response
    ends: the server closes this generator when the client goes away."""
    try:
        yield from chunks
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
