"""A PodStatus as the API's JSON: what Go always encodes, even when it is zero.

The status types omit their default values (msgspec ``omit_defaults``), as Go's
``omitempty`` does; ContainerStatus makes its always-encoded fields required so they are
never omitted. ``ContainerStateTerminated.exitCode`` is the one left: Go's
``ExitCode int32 `json:"exitCode"``` has no omitempty, so a container that exited 0 shows
``exitCode: 0``. Without it, an API client reads a terminated state with no exit code, and
every status write compares the server's ``exitCode: 0`` with a status lacking it: a patch
to send at each resync although nothing changed.
"""

from __future__ import annotations

from typing import Any

import msgspec

from runtime.status.types import PodStatus

_LISTS = ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")


def status_to_api(status: PodStatus) -> dict[str, Any]:
    """``status`` as JSON with every field Go always encodes."""
    out: dict[str, Any] = msgspec.to_builtins(status)
    for key in _LISTS:
        for container in out.get(key, ()):
            for state in ("state", "lastState"):
                terminated = (container.get(state) or {}).get("terminated")
                if terminated is not None:
                    terminated.setdefault("exitCode", 0)
    return out
