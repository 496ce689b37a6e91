"""Every drill, by name, in the order ``--all`` runs them."""

from __future__ import annotations

from actors.app.drills.actor_drills import ACTOR_DRILLS
from actors.app.drills.api_drills import API_DRILL_NAMES, API_DRILLS
from actors.app.drills.emulator import emulator_missing
from actors.app.drills.probe_drills import PROBE_DRILLS
from actors.app.drills.runner import Drill
from actors.app.drills.system_drills import SYSTEM_DRILLS

DRILLS: dict[str, Drill] = {d.name: d for d in (*ACTOR_DRILLS, *PROBE_DRILLS, *SYSTEM_DRILLS,
                                                 *API_DRILLS)}


def unavailable(name: str) -> str | None:
    """Why drill ``name`` cannot run from this installation, or None when it can: the API
    drills need the emulated API server of a source checkout."""
    return emulator_missing() if name in API_DRILL_NAMES else None
