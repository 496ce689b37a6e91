"""klog's verbosity (``-v, --v``, KubeletConfiguration ``logging.verbosity``) as this
project's log levels.

Upstream logs through klog: a line of ``klog.V(n)`` is written when ``--v`` is ``n`` or more,
and its conventions (the Kubernetes logging guide) give the numbers their meaning: V(0)
always, for what an operator must see; V(1) and V(2) the steady state a production node
logs (``--v=2`` in most unit files); V(3) extended changes; V(4) debug; V(5) and up trace.
This project logs with loguru's levels, INFO for the steady state, DEBUG and TRACE below
it; the verbosity picks the least severe level written accordingly.
"""

from __future__ import annotations

LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR")
"""The loguru level names ``--log-level`` takes (this project's own flag)."""

DEBUG_VERBOSITY = 4
TRACE_VERBOSITY = 5
"""klog's conventions: V(4) is debug, V(5) and more trace."""


def log_level(verbosity: int) -> str:
    """The least severe loguru level written at klog verbosity ``verbosity``."""
    if verbosity >= TRACE_VERBOSITY:
        return "TRACE"
    if verbosity >= DEBUG_VERBOSITY:
        return "DEBUG"
    return "INFO"
