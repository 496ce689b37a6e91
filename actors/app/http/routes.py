"""The falcon resources of the kubelet's HTTP API, each a thin reader of a KubeletView.

``build_app`` assembles them: the full set for the main and read-only ports, only the
health checks for the healthz port. Every response that is not a success is either the
upstream health-check text or a v1 ``Status`` object, as the API server answers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any, TypeAlias

import falcon
import msgspec
from loguru import logger
from prometheus_client import CONTENT_TYPE_LATEST

from actors.app.http.container_logs import ContainerLogsResource
from actors.app.http.stats import StatsEndpoints, add_stats_routes
from actors.app.http.view import KubeletView
from actors.kubelet.metric_text import prometheus_text
from runtime.pod.defaults import api_defaults, to_api_object
from runtime.pod.model import Pod
from runtime.status.types import PodStatus

_REASONS = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    422: "Invalid",
    500: "InternalError",
    503: "ServiceUnavailable",
}
_NOT_FOUND = "the server could not find the requested resource"
_ALLOWED_METHODS = ("GET", "HEAD")
_TEXT = "text/plain; charset=utf-8"

WSGIApp: TypeAlias = "falcon.App[falcon.Request, falcon.Response]"
"""A falcon WSGI app with the default request and response types."""


def _status_body(code: int, message: str) -> bytes:
    """A v1 Status object (what the API server sends with every failure), as JSON."""
    return msgspec.json.encode({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": _REASONS.get(code, "Unknown"),
        "code": code,
    })


def _serialize_error(req: falcon.Request, resp: falcon.Response, err: falcon.HTTPError) -> None:
    """Falcon's error serializer: every HTTPError becomes a v1 Status."""
    text = getattr(err, "kubelet_text", None)
    if text is not None:  # upstream's auth filter answers in plain text
        resp.content_type = _TEXT
        resp.text = text
        return
    code = err.status_code
    if isinstance(err, falcon.HTTPNotFound) and not err.description:
        message = _NOT_FOUND
    else:
        message = err.description or err.title or str(code)
    resp.content_type = falcon.MEDIA_JSON
    resp.data = _status_body(code, message)


def _internal_error(
    req: falcon.Request, resp: falcon.Response, err: Exception, params: dict[str, Any]
) -> None:
    """Any other exception (a view call failing): 500 with its message, server unharmed."""
    logger.opt(exception=err).warning("HTTP {} {} failed: {}", req.method, req.path, err)
    resp.status = falcon.HTTP_500
    resp.content_type = falcon.MEDIA_JSON
    resp.data = _status_body(500, f"{type(err).__name__}: {err}")


class _AccessLog:
    """Middleware: one debug line per request, and GET/HEAD as the only methods."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.started = time.monotonic()

    def process_resource(
        self, req: falcon.Request, resp: falcon.Response, resource: object,
        params: dict[str, Any],
    ) -> None:
        # Runs after routing: unknown paths stay 404 whatever the method.
        allowed = getattr(resource, "allowed_methods", _ALLOWED_METHODS)  # streams: POST too
        if resource is not None and req.method not in allowed:
            raise falcon.HTTPMethodNotAllowed(
                list(allowed), description=f"method {req.method} is not allowed")

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: object,
        req_succeeded: bool,
    ) -> None:
        started = getattr(req.context, "started", time.monotonic())
        logger.debug(
            "HTTP {} {} {} {} in {:.1f} ms", req.remote_addr, req.method, req.relative_uri,
            resp.status_code, (time.monotonic() - started) * 1000)


def _pod_list(items: list[dict[str, Any]]) -> bytes:
    return msgspec.json.encode(
        {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})


def _status_json(status: PodStatus) -> dict[str, Any]:
    """A PodStatus as JSON (the status types themselves always carry what Go always
    sends: phase, and per container state, lastState, ready, restartCount, image, imageID)."""
    out: dict[str, Any] = msgspec.to_builtins(status)
    return out


class PodsResource:
    """``/pods``: the pods the kubelet wants to run, as a v1 PodList with their status.

    Each pod's spec is what ``kubectl get pod -o yaml`` shows of it: with every API
    default (runtime.pod.defaults.api_defaults) and encoded as Go encodes it
    (to_api_object: fields with a static default shown, empty ones left out).
    """

    def __init__(self, view: KubeletView) -> None:
        self._view = view
        # Each pod's rendered spec, by UID, with the Pod it was rendered from: pods are
        # frozen, so the same object renders the same. Rendering is most of a GET's cost
        # (some 3 ms for 50 pods), and a poller of /pods mostly sees the same pods again.
        self._specs: dict[str, tuple[Pod, dict[str, Any]]] = {}

    def _spec(self, pod: Pod, specs: dict[str, tuple[Pod, dict[str, Any]]]) -> dict[str, Any]:
        known = self._specs.get(pod.uid)
        if known is not None and known[0] is pod:
            specs[pod.uid] = known
            return known[1]
        rendered: dict[str, Any] = to_api_object(api_defaults(pod))
        rendered.pop("kind", None)
        rendered.pop("apiVersion", None)
        specs[pod.uid] = (pod, rendered)
        return rendered

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        items: list[dict[str, Any]] = []
        specs: dict[str, tuple[Pod, dict[str, Any]]] = {}
        for pod, status in self._view.pods():
            items.append({**self._spec(pod, specs), "status": _status_json(status)})
        self._specs = specs  # (the pods of this GET: gone ones are not kept)
        resp.content_type = falcon.MEDIA_JSON
        resp.data = _pod_list(items)

    on_head = on_get


class RunningPodsResource:
    """``/runningpods/``: what the runtime runs, as upstream's handler shows it.

    Upstream lists only running pods (a ready sandbox or a running container) with their
    running containers, each reduced to name and image, as a v1 PodList.
    """

    def __init__(self, view: KubeletView) -> None:
        self._view = view

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        items: list[dict[str, Any]] = []
        for rp in self._view.running_pods():
            if not rp.running:
                continue
            containers = [
                {"name": c.name, "image": c.image, "resources": {}}
                for c in rp.containers if c.state == "running"
            ]
            items.append({
                "metadata": {"name": rp.name, "namespace": rp.namespace, "uid": rp.uid},
                "spec": {"containers": containers},
                "status": {},
            })
        resp.content_type = falcon.MEDIA_JSON
        resp.data = _pod_list(items)

    on_head = on_get


def _text(resp: falcon.Response, status: str, body: str) -> None:
    resp.status = status
    resp.content_type = _TEXT
    resp.set_header("X-Content-Type-Options", "nosniff")
    resp.text = body


class HealthzResource:
    """``/healthz``: every check, in upstream's format.

    200 ``ok`` when all pass (with ``?verbose``: one ``[+]name ok`` line per check and
    ``healthz check passed``); otherwise 500 listing every check, failing ones as
    ``[-]name failed: reason``, then ``healthz check failed``. ``?exclude=name`` (may
    repeat) leaves a check out.
    """

    def __init__(self, view: KubeletView) -> None:
        self._view = view

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        excluded = set(req.get_param_as_list("exclude") or ())
        lines: list[str] = []
        failed = False
        for name, reason in self._view.health().items():
            if name in excluded:
                excluded.discard(name)
                lines.append(f"[+]{name} excluded: ok\n")
            elif reason is None:
                lines.append(f"[+]{name} ok\n")
            else:
                failed = True
                lines.append(f"[-]{name} failed: {reason}\n")
        if excluded:
            lines.append("warn: some health checks cannot be excluded: no matches for "
                         + ",".join(f'"{name}"' for name in sorted(excluded)) + "\n")
        verbose = "".join(lines)
        if failed:
            _text(resp, falcon.HTTP_500, f"{verbose}healthz check failed\n")
        elif "verbose" in req.params:
            _text(resp, falcon.HTTP_200, f"{verbose}healthz check passed\n")
        else:
            _text(resp, falcon.HTTP_200, "ok")

    on_head = on_get


class HealthzCheckResource:
    """``/healthz/{check}``: one check; 200 ``ok``, 500 with the reason, 404 if unknown."""

    def __init__(self, view: KubeletView) -> None:
        self._view = view

    def on_get(self, req: falcon.Request, resp: falcon.Response, check: str) -> None:
        checks = self._view.health()
        if check not in checks:
            raise falcon.HTTPNotFound(description=f'health check "{check}" not found')
        reason = checks[check]
        if reason is None:
            _text(resp, falcon.HTTP_200, "ok")
        else:
            _text(resp, falcon.HTTP_500, f"internal server error: {reason}\n")

    on_head = on_get


class MetricsResource:
    """``/metrics``: the kubelet's registry in the Prometheus text format."""

    def __init__(self, view: KubeletView) -> None:
        self._view = view

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self._view.refresh_metrics()
        resp.content_type = CONTENT_TYPE_LATEST
        resp.data = prometheus_text(self._view.metrics().registry)

    on_head = on_get


class ConfigzResource:
    """``/configz`` (main port only): the effective KubeletConfiguration, rendered once at
    start (actors.app.config.configz). Upstream's handler sits on the mux itself, not behind a
    GET-only filter: every method gets the same answer, authorized as its verb."""

    allowed_methods = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")

    def __init__(self, body: bytes) -> None:
        self._body = body

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = falcon.MEDIA_JSON
        resp.set_header("X-Content-Type-Options", "nosniff")
        resp.data = self._body

    on_head = on_post = on_put = on_patch = on_delete = on_get


def add_configz_route(app: WSGIApp, body: bytes) -> None:
    """Serve ``body`` (actors.app.config.configz.configz_body) at ``/configz``."""
    app.add_route("/configz", ConfigzResource(body))


def _new_app(middleware: Sequence[Any] = ()) -> WSGIApp:
    app: WSGIApp = falcon.App(middleware=[_AccessLog(), *middleware])
    app.set_error_serializer(_serialize_error)
    app.add_error_handler(Exception, _internal_error)
    return app


def _add_healthz(app: WSGIApp, view: KubeletView) -> None:
    app.add_route("/healthz", HealthzResource(view))
    app.add_route("/healthz/{check}", HealthzCheckResource(view))


def build_app(view: KubeletView, stopping: threading.Event | None = None,
              middleware: Sequence[Any] = (), stats: StatsEndpoints | None = None) -> WSGIApp:
    """The WSGI app of the main and read-only ports: every endpoint; ``middleware`` (the
    main port's authentication and authorization) runs before routing."""
    app = _new_app(middleware)
    _add_healthz(app, view)
    app.add_route("/pods", PodsResource(view))
    running = RunningPodsResource(view)
    app.add_route("/runningpods/", running)
    app.add_route("/runningpods", running)
    app.add_route("/metrics", MetricsResource(view))
    app.add_route("/containerLogs/{namespace}/{pod}/{container}",
                  ContainerLogsResource(view, stopping))
    add_stats_routes(app, stats)
    return app


def build_healthz_app(view: KubeletView) -> WSGIApp:
    """The WSGI app of the healthz port: ``/healthz`` and its per-check subpaths only."""
    app = _new_app()
    _add_healthz(app, view)
    return app
