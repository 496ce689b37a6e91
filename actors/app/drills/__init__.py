"""Restart drills on a real containerd: inject a fault, check the invariants, replay.

``kubelet-actors drill NAME`` / ``drill --all`` (actors.app.drills.cli). Each drill runs in a
world of its own (actors.app.drills.env), injects its fault through a FaultPlan
(actors.core.faults) or from outside (signals, files, floods), and checks the invariants of
actors.app.drills.invariants while and after it runs.
"""
