"""``/debug/timeline``: the kubelet's own trace as the timeline page.

With ``--trace-dir`` the daemon records a trace; this path reads it back as it stands
(the writer flushes every few tens of milliseconds; a line still being written is left
out) and answers the self-contained timeline page (actors.core.trace.page_html): lanes,
message arrows, spans, a pod filter and a search, with nothing fetched from anywhere else.
It sits with the other debugging handlers: on the main port behind the same
authentication and authorization (subresource ``proxy``, as upstream's /debug paths), and
on the read-only port. Without a trace the answer is 404 saying how to record one.

Building the page reads the whole trace in the request's thread: it is a debugging aid,
not something to poll. The page's code (the trace reader, the kubelet's plug-ins, rich's
colours) is imported by the first request for it, not at the daemon's start, which it
would cost some 20 ms of CPU before /healthz answers.
"""

from __future__ import annotations

import falcon
from loguru import logger

TIMELINE_PATH = "/debug/timeline"


class TimelineResource:
    """The timeline page of the trace in ``trace_dir`` (None: the kubelet records none)."""

    def __init__(self, trace_dir: str | None) -> None:
        self._trace_dir = trace_dir

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if not self._trace_dir:
            raise falcon.HTTPNotFound(
                description="no trace is recorded: start the kubelet with --trace-dir to see "
                            "its timeline here")
        # The kubelet's plug-ins, for what they register: message names, summaries, pods,
        # labels.
        import actors.kubelet.timeline_labels
        import actors.kubelet.trace_tools  # noqa: F401
        from actors.core.trace.page_html import trace_page
        from actors.core.trace.reader import TraceError, read_trace

        try:
            trace = read_trace(self._trace_dir)
        except (TraceError, OSError) as err:
            logger.warning("timeline: cannot read the trace in {}: {}", self._trace_dir, err)
            raise falcon.HTTPServiceUnavailable(
                description=f"the trace in {self._trace_dir} cannot be read: {err}") from err
        resp.content_type = falcon.MEDIA_HTML
        resp.text = trace_page(trace, title=f"kubelet trace {self._trace_dir}")

    on_head = on_get


def add_timeline_route(app: falcon.App[falcon.Request, falcon.Response],
                       trace_dir: str | None) -> None:
    """Serve ``/debug/timeline`` from ``app``."""
    app.add_route(TIMELINE_PATH, TimelineResource(trace_dir))
