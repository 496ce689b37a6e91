"""klog's verbosity (``-v, --v``, KubeletConfiguration ``logging.verbosity``) as this
project's log levels.

Upstream logs through klog: a line of ``klog.V(n)`` is written when ``--v`` is ``n`` or more,
and its conventions (the Kubernetes logging guide) give the numbers their meaning: V(0)
always, for what an operator must see; V(1) and V(2) the steady state a production node
logs (``--v=2`` in most unit files); V(3) extended changes; V(4) debug; V(5) and up trace.
This project logs with loguru's levels, INFO for the steady state, DEBUG and TRACE below
it; the verbosity picks the least severe level written accordingly.

klog's ``--vmodule pattern=N,...`` gives the files whose name matches a pattern their own
verbosity: a glob (Go's filepath.Match: ``*``, ``?``, ``[...]``) matched against the file's
base name without its extension (``pod_worker`` for pod_worker.py, as klog matches
``kubelet_pods`` for kubelet_pods.go), or against its whole path without the extension
when the pattern has a ``/``; the first pattern that matches wins. ``VModule`` maps it onto
loguru: each log line is written when its level is at least the least severe level of its
file's verbosity.
"""

from __future__ import annotations

import re
from functools import lru_cache

LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR")
"""The loguru level names ``--log-level`` takes (this project's own flag)."""

_SEVERITY = {"TRACE": 5, "DEBUG": 10, "INFO": 20, "SUCCESS": 25, "WARNING": 30, "ERROR": 40,
             "CRITICAL": 50}
"""loguru's standard levels' numbers, to order them (the drills also name SUCCESS and
CRITICAL)."""

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


def _go_glob(pattern: str) -> re.Pattern[str]:
    """Go's filepath.Match pattern as a regular expression (``*`` and ``?`` stop at ``/``)."""
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        elif char == "[" and (end := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1:end]
            negated = body.startswith("^")
            body = "".join(c if c == "-" else re.escape(c) for c in body[negated:])
            out.append(f"[{'^' if negated else ''}{body}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out))


class VModule:
    """klog's --vmodule on loguru's levels (see the module's docstring): ``level_of`` a
    source file, and ``least``, the least severe level any file writes (a sink's level)."""

    def __init__(self, patterns: tuple[tuple[str, int], ...], level: str) -> None:
        self.level = level
        self._patterns = tuple((_go_glob(p), "/" in p, log_level(v)) for p, v in patterns)
        self.level_of = lru_cache(maxsize=4096)(self._level_of)
        self.least = min((level, *(lv for _, _, lv in self._patterns)),
                         key=lambda name: _SEVERITY.get(name, 0))

    def _level_of(self, path: str) -> str:
        full = path.rpartition(".")[0] if path.endswith(".py") else path
        base = full.rpartition("/")[2]
        for glob, whole_path, level in self._patterns:
            if glob.fullmatch(full if whole_path else base):
                return level
        return self.level
