"""metav1.Time on the wire: the one formatter every API value here uses."""

from __future__ import annotations

import datetime


def rfc3339(seconds: float) -> str:
    """Kubernetes timestamps: UTC, whole seconds, ``Z`` suffix."""
    moment = datetime.datetime.fromtimestamp(int(seconds), tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
