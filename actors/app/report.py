"""Printing run-once results: a rich table for people, JSON or YAML for machines (``-o``,
rendered as every command renders them: actors.app.output_format)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

import msgspec

from actors.app.runonce import PodOutcome
from runtime.errors import ManifestError


def _containers(outcome: PodOutcome) -> str:
    parts = []
    for status in (*outcome.status.init_container_statuses, *outcome.status.container_statuses):
        restarts = f" ({status.restart_count} restarts)" if status.restart_count else ""
        parts.append(f"{status.name}: {status.state.summary}{restarts}")
    return "\n".join(parts)


def print_table(
    outcomes: Sequence[PodOutcome], errors: Sequence[ManifestError], out: TextIO | None = None
) -> None:
    # rich costs about 20 ms to import: only the table output pays for it.
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out or sys.stdout, width=160, soft_wrap=False)
    table = Table(title="kubelet-actors --runonce", show_lines=True)
    for column in ("NAMESPACE", "POD", "UID", "PHASE", "IP", "CONTAINERS", "RESULT"):
        table.add_column(column, overflow="fold")
    for o in outcomes:
        m = o.pod.metadata
        result = "ok" if o.ok else f"FAILED: {o.error}"
        table.add_row(m.namespace, m.name, m.uid[:8], o.status.phase, o.status.pod_ip or "-",
                      _containers(o), result, style=None if o.ok else "red")
    console.print(table)
    for error in errors:
        console.print(f"[red]manifest error[/red] {error}", markup=True, highlight=False)


def outcome_json(outcome: PodOutcome) -> dict[str, Any]:
    pod = msgspec.to_builtins(outcome.pod)
    pod["status"] = msgspec.to_builtins(outcome.status)
    return {"pod": pod, "ok": outcome.ok, "error": outcome.error}


def document(outcomes: Sequence[PodOutcome], errors: Sequence[ManifestError]) -> dict[str, Any]:
    """The run's result as one JSON-shaped value: each pod with its outcome, the manifest
    errors, and whether all went well."""
    return {
        "pods": [outcome_json(o) for o in outcomes],
        "errors": [{"file": e.source, "field": e.path, "error": e.cause} for e in errors],
        "ok": all(o.ok for o in outcomes) and not errors,
    }


def print_document(
    outcomes: Sequence[PodOutcome], errors: Sequence[ManifestError], output: str,
    out: TextIO | None = None,
) -> None:
    """The result as ``output`` (json or yaml) prints it."""
    from actors.app.output_format import render

    (out or sys.stdout).write(render(document(outcomes, errors), output))
