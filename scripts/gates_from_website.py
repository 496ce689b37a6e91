"""Derive the upstream feature gate table (actors/app/config/upstream_gates.py) for one
Kubernetes release from a kubernetes/website checkout, and compare it with the committed one.

The website documents every gate in one file,
content/en/docs/reference/command-line-tools-reference/feature-gates/<Name>.md, whose front
matter lists its ``stages`` (stage alpha/beta/stable/deprecated, defaultValue, fromVersion,
toVersion, sometimes ``locked``) and says ``removed: true`` once the gate is gone. A gate
exists in release V when it is not removed and its newest stage begun by V has no toVersion
before V; that stage gives its default and stage. The website records upstream's
LockToDefault only now and then, so the lock is the stage's ``locked`` where the page gives
one, else the committed table's
where the gate's default and stage are unchanged, else (a gate new to the table, or one
whose stage changed) upstream's rule for a GA gate: locked to true. The ``kubelet`` mark is
the committed table's; a gate new to the table is printed with ``?`` for a person to decide
from its page. AllAlpha and AllBeta are component-base's and carried over.

Reads a git directory (a bare snapshot is enough), no network:

    python scripts/gates_from_website.py --git-dir /path/to/website.git --rev main \
        --version 1.35 [--diff]

The website lags the code in places (at 1.35 it still calls SupplementalGroupsPolicy and
SystemdWatchdog beta, and keeps pages of gates the code removed unmarked), so read the
``--diff`` and check a change against the page's history before taking it.

Without ``--diff`` it prints the table body (``Name default stage [locked] [kubelet]``,
the committed order kept for the gates it keeps, new gates appended in name order); with
``--diff``, what changed against the committed table. The table stays committed data:
this only helps reproduce it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import yaml

from actors.app.config.upstream_gates import UPSTREAM_GATES, GateSpec

GATES_DIR = "content/en/docs/reference/command-line-tools-reference/feature-gates"
STAGES = {"alpha": "ALPHA", "beta": "BETA", "stable": "GA", "deprecated": "DEPRECATED"}
COMPONENT_BASE = ("AllAlpha", "AllBeta")


@dataclass(frozen=True)
class Derived:
    """One gate at the release asked for, and whether its lock was read or inferred."""

    spec: GateSpec
    lock_read: bool


def _version(text: object) -> tuple[int, ...]:
    return tuple(int(part) for part in str(text).strip().split(".")[:2])


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True,
                          capture_output=True, text=True).stdout


def front_matters(git_dir: str, rev: str) -> dict[str, Mapping[str, object]]:
    """Each gate page's front matter, by its title (the gate's name)."""
    names = _git(git_dir, "ls-tree", "--name-only", f"{rev}:{GATES_DIR}").split()
    pages: dict[str, Mapping[str, object]] = {}
    for name in names:
        if not name.endswith(".md") or name.startswith("_"):
            continue
        text = _git(git_dir, "show", f"{rev}:{GATES_DIR}/{name}")
        _, front, _ = text.split("---", 2)
        page = yaml.safe_load(front)
        # The title is the gate's name; a file name can differ from it in case.
        pages[str(page.get("title") or name.removesuffix(".md"))] = page
    return pages


def at_version(page: Mapping[str, object], version: tuple[int, ...]) -> dict[str, object] | None:
    """The stage of ``page`` that spans ``version`` (None: the gate is not in that release)."""
    if page.get("removed"):
        return None
    stages = page.get("stages") or []
    assert isinstance(stages, list)
    # The newest stage begun by then: pages do not always close an earlier stage with a
    # toVersion when they add the next one.
    begun = [stage for stage in stages if _version(stage["fromVersion"]) <= version]
    if not begun:
        return None
    stage = max(begun, key=lambda stage: _version(stage["fromVersion"]))
    if stage.get("toVersion") and _version(stage["toVersion"]) < version:
        return None
    return dict(stage)


def derive(pages: Mapping[str, Mapping[str, object]], version: tuple[int, ...],
           committed: Mapping[str, GateSpec]) -> dict[str, Derived]:
    """Every gate of ``version``, with the committed table's kubelet marks (and locks where
    the website says nothing and the gate did not change)."""
    gates: dict[str, Derived] = {}
    spelling = {name.lower(): name for name in committed}
    for title, page in pages.items():
        stage = at_version(page, version)
        if stage is None:
            continue
        # Spelled as upstream registers it (a page can differ in case: ...CriApi).
        name = spelling.get(title.lower(), title)
        default = bool(stage["defaultValue"])
        kind = STAGES[str(stage["stage"])]
        old = committed.get(name)
        if "locked" in stage:
            locked, read = bool(stage["locked"]), True
        elif old is not None and (old.default, old.stage) == (default, kind):
            locked, read = old.locked, True
        else:
            locked, read = kind == "GA" and default, False
        gates[name] = Derived(GateSpec(default=default, stage=kind, locked=locked,
                                       kubelet=old.kubelet if old else False), read)
    for name in COMPONENT_BASE:
        gates[name] = Derived(committed[name], True)
    return gates


def table(gates: Mapping[str, Derived], committed: Mapping[str, GateSpec]) -> list[str]:
    """Table lines: the committed order for kept gates, then new ones in name order."""
    order = [n for n in committed if n in gates] + sorted(set(gates) - set(committed))
    lines = []
    for name in order:
        spec = gates[name].spec
        marks = (["locked"] if spec.locked else []) + (
            ["kubelet"] if spec.kubelet else [] if name in committed else ["?"])
        lines.append(" ".join([name, str(spec.default).lower(), spec.stage, *marks]))
    return lines


def diff(gates: Mapping[str, Derived], committed: Mapping[str, GateSpec]) -> list[str]:
    """What differs from the committed table, one line each."""
    out = [f"- {name} (not in the release)" for name in committed if name not in gates]
    out += [f"+ {name} {d.spec}" for name, d in sorted(gates.items()) if name not in committed]
    for name, old in committed.items():
        if name in gates and gates[name].spec != old:
            new = gates[name]
            note = "" if new.lock_read else " (lock inferred)"
            out.append(f"~ {name} {old} -> {new.spec}{note}")
    return out


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-dir", required=True)
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--version", required=True, help="a release, e.g. 1.37")
    parser.add_argument("--diff", action="store_true")
    args = parser.parse_args(argv)
    gates = derive(front_matters(args.git_dir, args.rev), _version(args.version),
                   UPSTREAM_GATES)
    print("\n".join(diff(gates, UPSTREAM_GATES) if args.diff else table(gates,
                                                                           UPSTREAM_GATES)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
