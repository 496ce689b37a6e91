"""The HTTP config source: static pods read from a URL (--manifest-url), polled.

Upstream's http source (pkg/kubelet/config/http.go) GETs the URL every
--http-check-frequency (20 s) with a 10 s client timeout. The body is one pod or a
PodList; each pod becomes a static pod (named for the node, UID from the URL). A status
other than 200, a failed request, or a body that does not parse is an error: the pods of
the last good body stay. An unchanged body is not parsed again. A zero-length body is, as
upstream, an empty set (plus a problem), so the source is marked seen.

This actor fetches on start and on each Tick("http-poll") the daemon schedules, in its own
handler: it has nothing else to do, so a fetch of up to 10 s blocks nobody else. It sends
a SourceSnapshot("http", pods, problems, warnings) to the supervisor when what it would
send differs from the last snapshot (pod UIDs or problems). Before the first good body
nothing is sent, as upstream: an error must not make the source look ready with no pods.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, Final

from loguru import logger

from actors.core.actor import Actor
from actors.core.dispatch import Dispatch
from actors.core.messages import Tick
from actors.kubelet import names
from actors.kubelet.messages import ManifestProblem, SourceSnapshot
from actors.kubelet.sources.file import ProblemLog, problem_from_error
from runtime.clock import Clock
from runtime.errors import ManifestError
from runtime.pod.manifest import parse_manifest_with_warnings
from runtime.pod.model import Pod
from runtime.pod.static import make_static_pod

__all__ = ["MAX_BODY", "NAME", "POLL_TICK", "TIMEOUT", "Fetch", "HTTPSource", "urllib_fetch"]

NAME = names.SOURCE_HTTP
POLL_TICK = names.TICK_HTTP_POLL
SOURCE: Final = "http"
TIMEOUT = 10.0
"""Upstream's client timeout for the manifest URL, in seconds."""
MAX_BODY = 10 * 1024 * 1024
"""Upstream reads at most this much of a body (maxConfigLength)."""

Fetch = Callable[[str, float], tuple[int, bytes]]
"""GET a URL with a timeout: (status code, body). Raises OSError when there is no answer."""

_log = logger.bind(pod="", uid="", container="")


def urllib_fetch(url: str, timeout: float) -> tuple[int, bytes]:
    """The default Fetch: urllib, redirects followed, error statuses returned, not raised."""
    request = urllib.request.Request(url, headers={"User-Agent": "kubelet-actors"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status), bytes(response.read(MAX_BODY + 1))
    except urllib.error.HTTPError as err:
        with err:
            return int(err.code), bytes(err.read(MAX_BODY + 1))


class HTTPSource(Actor):
    """Polls a manifest URL and sends its static pods to the supervisor."""

    def __init__(
        self,
        dispatch: Dispatch,
        url: str,
        node_name: str,
        clock: Clock,
        incarnation: int = 0,
        fetch: Fetch | None = None,
        timeout: float = TIMEOUT,
    ) -> None:
        super().__init__(NAME, dispatch, incarnation)
        self.url = url
        self.node_name = node_name
        self.clock = clock
        self.timeout = timeout
        self._fetch: Fetch = fetch or urllib_fetch
        self._body: bytes | None = None  # the last body parsed, good or bad
        self._parsed: tuple[tuple[Pod, ...], tuple[ManifestProblem, ...], tuple[str, ...]] = (
            (), (), ()
        )  # fmt: skip
        self._good: tuple[Pod, ...] | None = None  # the pods of the last good body
        self._last: tuple[tuple[Pod, ...], tuple[ManifestProblem, ...]] | None = None
        self._problem_log = ProblemLog("static pods from {}:")
        self.fetches = 0  # how many times the URL was fetched (for tests and metrics)
        self.sent = 0  # how many snapshots were sent

    def on_start(self) -> None:
        self._poll("start")

    def handle(self, message: Any) -> Any:
        if isinstance(message, Tick) and message.kind == POLL_TICK:
            self._poll("poll")
            return None
        return super().handle(message)

    # --- one poll -------------------------------------------------------------------------

    def _poll(self, why: str) -> None:
        pods, problems, warnings = self._read()
        self._problem_log.note(problems, warnings)
        if pods is None:
            return  # no good body yet: not ready, nothing to keep
        # The whole pods, not only their UIDs: a manifest that names its UID may change
        # its labels alone, and the sync loop must hear it (upstream sends every listing).
        key = (tuple(pods), problems)
        if key == self._last:
            return
        self._last = key
        self.sent += 1
        _log.debug("http source ({}): {} pod(s), {} problem(s) from {}",
                   why, len(pods), len(problems), self.url)  # fmt: skip
        self.send(names.SYNC_LOOP, SourceSnapshot(SOURCE, pods, problems, warnings))

    def _read(
        self,
    ) -> tuple[tuple[Pod, ...] | None, tuple[ManifestProblem, ...], tuple[str, ...]]:
        """Fetch and decode: (pods to send, or None for none yet; problems; warnings)."""
        self.fetches += 1
        try:
            code, body = self._fetch(self.url, self.timeout)
        except (OSError, ValueError) as err:  # URLError, timeouts, refused, bad URL
            reason = getattr(err, "reason", None) or err
            return self._good, (self._problem(f"cannot fetch: {reason}"),), ()
        if code != 200:
            return self._good, (self._problem(f"HTTP {code}"),), ()
        if len(body) > MAX_BODY:
            return self._good, (self._problem(f"body larger than {MAX_BODY} bytes"),), ()
        if not body:
            # As upstream: an empty set, so the source counts as seen, and an error.
            self._good = ()
            return (), (self._problem("zero-length data received"),), ()
        if body != self._body:
            self._body = body
            self._parsed = self._decode(body)
        pods, problems, warnings = self._parsed
        if problems:
            return self._good, problems, warnings
        self._good = pods
        return pods, problems, warnings

    def _decode(
        self, body: bytes
    ) -> tuple[tuple[Pod, ...], tuple[ManifestProblem, ...], tuple[str, ...]]:
        """A new body's static pods, or its problem (the last good pods then stay)."""
        try:
            decoded, warnings = parse_manifest_with_warnings(body, self.url)
            pods = tuple(make_static_pod(p, self.node_name, SOURCE, self.url) for p in decoded)
        except ManifestError as err:
            return (), (problem_from_error(err),), ()
        return pods, (), warnings

    def _problem(self, cause: str) -> ManifestProblem:
        return ManifestProblem(self.url, "", cause)
