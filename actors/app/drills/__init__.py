"""Restart drills on a real containerd: inject a fault, check the invariants, replay.

``kubelet-actors drill NAME`` / ``drill --all`` (actors.drills.cli). Each drill runs in a
world of its own (actors.drills.env), injects its fault through a FaultPlan
(actors.faults) or from outside (signals, files, floods), and checks the invariants of
actors.drills.invariants while and after it runs.
"""
