"""The kubelet's labels on the timeline page: its lanes' groups and its pod workers' syncs.

Importing this module registers them with actors.app.tools.page_data.PAGE_LABELS (the
page's data is built by viewers that know no kubelet). A pod worker's RunPending is one
sync round of its pod (the worker sends it to itself once an update is pending), so its
handler span is titled "sync"; UpdatePod only hands the worker the pod. The pods' story
(their containers' runs, back-offs, probes, kills) and what is routine traffic come from
actors.app.tools.kubelet_story.
"""

from __future__ import annotations

from actors.app.tools.kubelet_story import pod_story, routine
from actors.app.tools.page_data import PAGE_LABELS
from actors.core.trace.names import MESSAGES
from actors.kubelet import names
from actors.kubelet.pod_worker import RunPending

_SYNC_ROUND = MESSAGES.name_of(RunPending())
_SOURCES = (names.SOURCE_FILE, names.SOURCE_HTTP, names.SOURCE_API)


def lane_group(actor: str) -> str:
    """The heading a lane is listed under."""
    if names.is_worker(actor):
        return "pod workers"
    if actor.startswith(names.API_PREFIX):
        return "cluster API"
    if actor in _SOURCES:
        return "pod sources"
    return "kubelet"


def span_title(actor: str, type_name: str) -> str | None:
    """A pod worker's sync round is "sync"; other handler spans keep their message type."""
    if names.is_worker(actor) and type_name == _SYNC_ROUND:
        return "sync"
    return None


PAGE_LABELS.register(lane_group, span_title, story=pod_story, routine=routine)
