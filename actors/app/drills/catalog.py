"""Every drill, by name, in the order ``--all`` runs them."""

from __future__ import annotations

from actors.app.drills.actor_drills import ACTOR_DRILLS
from actors.app.drills.runner import Drill
from actors.app.drills.system_drills import SYSTEM_DRILLS

DRILLS: dict[str, Drill] = {d.name: d for d in (*ACTOR_DRILLS, *SYSTEM_DRILLS)}
