"""What a ``/containerLogs`` request asks, and which container instance answers it:
pure functions with upstream's rules and words.

- ``parse_log_query``: the query as upstream decodes a v1 PodLogOptions from it (the
  kubelet's legacy ``tail`` too), then ``ValidatePodLogOptions``.
- ``log_container_id``: upstream's validateContainerLogStatus (pkg/kubelet/
  kubelet_pods.go): from the pod's v1 status, the instance whose log is read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from msgspec import Struct

from runtime.kuberuntime.logs import STREAM_ALL, STREAMS, LogOptions, parse_timestamp
from runtime.status.types import ContainerStatus, PodStatus

BAD_REQUEST, NOT_FOUND, UNPROCESSABLE = 400, 404, 422

_INT64 = re.compile(r"[+-]?\d+\Z")
_RFC3339 = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)\Z")


class LogRequestError(Exception):
    """A request the kubelet refuses: the HTTP code and upstream's message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class LogRequest(Struct, frozen=True):
    """A decoded, valid request: the reading options and whether the previous instance
    is asked for."""

    options: LogOptions
    previous: bool = False


def _bool(values: Sequence[str]) -> bool:
    """apimachinery's query bool: absent, "0" and "false" (any case) are false; any
    other value, the empty one included, is true."""
    return bool(values) and values[0] != "0" and values[0].lower() != "false"


def _int(query: Mapping[str, Sequence[str]], name: str) -> int | None:
    values = query.get(name)
    if not values:
        return None
    if not _INT64.match(values[0]) or not -(2**63) <= int(values[0]) < 2**63:
        raise LogRequestError(BAD_REQUEST, f'Unable to decode query: {name}: '
                              f'strconv.ParseInt: parsing "{values[0]}": invalid syntax')
    return int(values[0])


def _since_time(query: Mapping[str, Sequence[str]]) -> int | None:
    values = query.get("sinceTime")
    if not values or values[0] in ("", "null"):
        return None
    raw = values[0]
    when = parse_timestamp(raw.encode()) if _RFC3339.match(raw) else None
    if when is None:
        raise LogRequestError(BAD_REQUEST, f'Unable to decode query: sinceTime: parsing '
                              f'time "{raw}" as RFC3339 ("2006-01-02T15:04:05Z07:00")')
    return when


def validation_errors(tail: int | None, limit: int | None, since_seconds: int | None,
                      since_time: int | None, stream: str | None) -> list[str]:
    """Upstream's ValidatePodLogOptions, each error as field.Error prints it."""
    errors: list[str] = []
    if tail is not None and tail < 0:
        errors.append(f"tailLines: Invalid value: {tail}: must be greater than or equal to 0")
    if limit is not None and limit < 1:
        errors.append(f"limitBytes: Invalid value: {limit}: must be greater than 0")
    if since_seconds is not None and since_time is not None:
        errors.append(": Forbidden: at most one of `sinceTime` or `sinceSeconds` may be "
                      "specified")
    elif since_seconds is not None and since_seconds < 1:
        errors.append(f"sinceSeconds: Invalid value: {since_seconds}: must be greater than 0")
    if stream is not None:
        if stream != STREAM_ALL and stream not in STREAMS:
            supported = ", ".join(f'"{s}"' for s in sorted((STREAM_ALL, *STREAMS)))
            errors.append(f'stream: Unsupported value: "{stream}": supported values: '
                          f"{supported}")
        if stream != STREAM_ALL and tail is not None:
            errors.append(": Forbidden: `tailLines` and specific `stream` are mutually "
                          "exclusive for now")
    return errors


def parse_log_query(query: Mapping[str, Sequence[str]], pod: str, now_ns: int) -> LogRequest:
    """The request's options; LogRequestError 400 when a value cannot be decoded, 422
    (as the API server's Invalid, naming each field) when it breaks a rule."""
    query = dict(query)
    tail = query.get("tail")
    if tail:  # the kubelet's legacy parameter: a count, or "all"
        query.pop("tailLines", None)
        if tail[0] != "all":
            query["tailLines"] = tail
    tail_lines = _int(query, "tailLines")
    limit = _int(query, "limitBytes")
    since_seconds = _int(query, "sinceSeconds")
    since_time = _since_time(query)
    stream = query["stream"][0] if query.get("stream") else None
    errors = validation_errors(tail_lines, limit, since_seconds, since_time, stream)
    if errors:
        detail = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise LogRequestError(UNPROCESSABLE, f'PodLogOptions "{pod}" is invalid: {detail}')
    since = since_time
    if since_seconds is not None:
        since = now_ns - since_seconds * 1_000_000_000
    return LogRequest(
        LogOptions(tail_lines=tail_lines, limit_bytes=limit, since_ns=since,
                   timestamps=_bool(query.get("timestamps", ())),
                   follow=_bool(query.get("follow", ())), stream=stream or STREAM_ALL),
        previous=_bool(query.get("previous", ())))


def _find(status: PodStatus, container: str) -> ContainerStatus | None:
    for statuses in (status.container_statuses, status.init_container_statuses,
                     status.ephemeral_container_statuses):
        for candidate in statuses:
            if candidate.name == container:
                return candidate
    return None


def log_container_id(pod: str, status: PodStatus, container: str, previous: bool) -> str:
    """The ID (``containerd://...``) of the instance whose log answers, or
    LogRequestError 400 with upstream's reason why there is none."""
    found = _find(status, container)
    where = f'container "{container}" in pod "{pod}"'
    if found is None:
        raise LogRequestError(BAD_REQUEST, f"{where} is not available")
    last = found.last_state.terminated
    state = found.state
    if previous:
        if last is None or not last.container_id:
            raise LogRequestError(
                BAD_REQUEST, f'previous terminated container "{container}" in pod "{pod}" '
                "not found")
        return last.container_id
    if state.running is not None:
        return found.container_id
    if state.terminated is not None:
        if state.terminated.container_id:
            return state.terminated.container_id
        if last is not None and last.container_id:
            return last.container_id
        raise LogRequestError(BAD_REQUEST, f"{where} is terminated")
    if last is not None:
        if not last.container_id:
            raise LogRequestError(BAD_REQUEST, f"{where} is terminated")
        return last.container_id
    if state.waiting is not None:
        reason = state.waiting.reason
        why = {"ErrImagePull": "image can't be pulled",
               "ImagePullBackOff": "trying and failing to pull image"}.get(reason, reason)
        raise LogRequestError(BAD_REQUEST, f"{where} is waiting to start: {why}")
    raise LogRequestError(BAD_REQUEST, f"{where} is waiting to start - no logs yet")
