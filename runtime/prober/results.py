"""Probe outcomes, as the runtime manager and the status manager read them."""

from __future__ import annotations

import enum


class ProbeResult(enum.Enum):
    """The current verdict of one probe of one container (upstream proberesults.Result)."""

    UNKNOWN = "Unknown"
    SUCCESS = "Success"
    FAILURE = "Failure"
