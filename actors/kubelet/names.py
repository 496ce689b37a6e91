"""Every name the kubelet's actors are known by: addresses, tick kinds, health checks.

Addresses are what metrics, traces and drills name, so they stay as they are; this is the
one place that spells them.
"""

from __future__ import annotations

from runtime.ids import PodUID

# --- addresses -------------------------------------------------------------------------

SYNC_LOOP = "supervisor"
"""Upstream's syncLoop as an actor, and the supervisor of every other actor."""
STATUS = "status"
PROBES = "probes"
KILLER = "killer"
PLEG = "pleg"
RUNTIME_MONITOR = "runtime-monitor"
SOURCE_FILE = "source/file"
SOURCE_HTTP = "source/http"
SOURCE_API = "source/api"
"""The API server as a pod source (cluster mode)."""
NODE_STATUS = "api/node-status"
NODE_LEASE = "api/lease"
STATS = "stats"
"""Collects resource stats for /stats/summary and the metrics endpoints (not replayed)."""
LOG_ROTATION = "log-rotation"
"""Rotates the running containers' logs (upstream's container log manager; not replayed)."""
CLIENT_CERTIFICATE = "api/client-certificate"
"""Rotates the kubelet's client certificate (--rotate-certificates)."""
SERVING_CERTIFICATE = "api/serving-certificate"
"""Requests and rotates the main port's serving certificate (serverTLSBootstrap)."""
POD_WRITER = "api/pods"
EVICTION = "eviction"
"""The eviction manager: node pressure conditions and evictions."""
EVENTS = "events"
"""The kubelet's events: logged, kept (the newest) and, in cluster mode, handed on."""
EVENT_WRITER = "api/events"
"""Events written to the API server (cluster mode)."""
"""Pod status, final deletions and mirror pods, written to the API server."""
API_PREFIX = "api/"
SHUTDOWN = "shutdown"
"""The node shutdown manager: logind's PrepareForShutdown, pods stopped by priority."""
GC = "gc"
"""Container and image garbage collection (upstream's containerGC and imageGCManager)."""
TIMERS = "timers"
"""The sender of timer messages (not an actor)."""

WORKER_PREFIX = "pod/"
WORKER_GROUP = "pod"
"""Pod workers as one line in per-actor metrics (their mailboxes summed)."""


def worker_name(uid: PodUID | str) -> str:
    """The address of the pod worker for ``uid``."""
    return f"{WORKER_PREFIX}{uid}"


def is_worker(name: str) -> bool:
    return name.startswith(WORKER_PREFIX)


def worker_uid(name: str) -> PodUID:
    """The pod UID a worker address names (``is_worker(name)`` must hold)."""
    return PodUID(name[len(WORKER_PREFIX):])


def actor_group(name: str) -> str:
    """An address as metrics label it: every pod worker as ``pod``, others as they are."""
    return WORKER_GROUP if is_worker(name) else name


# --- timer kinds (Tick.kind) -------------------------------------------------------------

TICK_SYNC = "sync"
TICK_HOUSEKEEPING = "housekeeping"
TICK_RELIST = "relist"
TICK_RUNTIME_CHECK = "runtime-check"
TICK_FILE_RELIST = "file-relist"
TICK_HTTP_POLL = "http-poll"
TICK_PROBE = "probe"
TICK_NODE_STATUS = "node-status"
TICK_LEASE = "lease-renew"
TICK_CERTIFICATE_ROTATE = "certificate-rotate"
TICK_CERTIFICATE_CHECK = "certificate-check"
TICK_POD_STATUS_RESYNC = "pod-status-resync"
TICK_EVENT_RETRY = "event-retry"
TICK_STATS = "stats"
TICK_CONTAINER_GC = "container-gc"
TICK_IMAGE_GC = "image-gc"
TICK_LOG_ROTATION = "log-rotation"
TICK_EVICTION = "eviction"

# --- health checks (/healthz/<name>) -----------------------------------------------------

HEALTH_PING = "ping"
HEALTH_SYNC_LOOP = "syncloop"
HEALTH_PLEG = "pleg"
HEALTH_RUNTIME = "runtime"
HEALTH_CHECKS = (HEALTH_PING, HEALTH_SYNC_LOOP, HEALTH_PLEG, HEALTH_RUNTIME)
