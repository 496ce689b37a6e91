"""``/debug/timeline``: the kubelet's own trace as the timeline page.

With ``--trace-dir`` the daemon records a trace; this path has its writer write what it
holds first (``LiveTrace.flush``: otherwise records wait for the writer for up to
``--trace-flush-frequency``, 5 s by default), reads it back and answers the
self-contained timeline page (actors.app.tools.page_html): lanes, message arrows,
spans, a pod filter and a search, with nothing fetched from anywhere else. It sits with
the other debugging handlers: on the main port behind the same authentication and
authorization (subresource ``proxy``, as upstream's /debug paths), and on the read-only
port. Without a trace the answer is 404 saying how to record one.

Building the page reads the whole trace in the request's thread: it is a debugging aid,
not something to poll. The page's code (the trace reader, the kubelet's plug-ins, rich's
colours) is imported by the first request for it, not at the daemon's start, which it
would cost some 20 ms of CPU before /healthz answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import falcon
from loguru import logger

TIMELINE_PATH = "/debug/timeline"


@dataclass(frozen=True)
class LiveTrace:
    """The trace the kubelet records: its directory, and how to have its writer write
    everything recorded so far (actors.core.trace.writer.TraceWriter.flush)."""

    directory: str
    flush: Callable[[], bool]


class TimelineResource:
    """The timeline page of the kubelet's trace (None: the kubelet records none)."""

    def __init__(self, trace: LiveTrace | None) -> None:
        self._trace = trace

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if self._trace is None:
            raise falcon.HTTPNotFound(
                description="no trace is recorded: start the kubelet with --trace-dir to see "
                            "its timeline here")
        # The kubelet's plug-ins, for what they register: message names, summaries, pods,
        # labels.
        import actors.app.tools.kubelet_labels
        import actors.app.tools.kubelet_plugin  # noqa: F401
        from actors.app.tools.page_html import trace_page
        from actors.core.trace.reader import TraceError, read_trace

        directory = self._trace.directory
        if not self._trace.flush():
            logger.warning("timeline: the trace writer did not write its records in time; "
                           "the page shows the file as it stands")
        try:
            trace = read_trace(directory)
        except (TraceError, OSError) as err:
            logger.warning("timeline: cannot read the trace in {}: {}", directory, err)
            raise falcon.HTTPServiceUnavailable(
                description=f"the trace in {directory} cannot be read: {err}") from err
        resp.content_type = falcon.MEDIA_HTML
        resp.text = trace_page(trace, title=f"kubelet trace {directory}")

    on_head = on_get


def add_timeline_route(app: falcon.App[falcon.Request, falcon.Response],
                       trace: LiveTrace | None) -> None:
    """Serve ``/debug/timeline`` from ``app``."""
    app.add_route(TIMELINE_PATH, TimelineResource(trace))
