"""scripts/gates_from_website.py: a release's gates read from kubernetes/website's gate pages
(a local git directory, no network), with the committed table's kubelet marks and locks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "gates_from_website.py"
GATES_DIR = "content/en/docs/reference/command-line-tools-reference/feature-gates"


def _page(title: str, stages: str, removed: bool = False) -> str:
    return (f"---\ntitle: {title}\ncontent_type: feature_gate\n_build:\n  list: never\n"
            f"  render: false\n" + ("removed: true\n" if removed else "")
            + f"stages:\n{stages}---\nWhat it does.\n")


def _stage(stage: str, default: bool, start: str, end: str = "", locked: bool = False) -> str:
    return (f"  - stage: {stage}\n    defaultValue: {str(default).lower()}\n"
            + ("    locked: true\n" if locked else "")
            + f"    fromVersion: \"{start}\"\n" + (f"    toVersion: \"{end}\"\n" if end else ""))


PAGES = {
    # Committed as BETA default true: a GA stage from 1.37 the page does not lock.
    "KubeletPSI": _stage("beta", True, "1.34", "1.36") + _stage("stable", True, "1.37"),
    # An earlier stage left open: the newer one counts.
    "MemoryQoS": _stage("alpha", False, "1.22") + _stage("beta", True, "1.37"),
    # The page's own lock wins.
    "KMSv1": _stage("deprecated", False, "1.29", locked=True),
    # Gone by then.
    "WinDSR": _stage("stable", True, "1.33", "1.36"),
    "GangScheduling": "removed",
    # New: spelled by its title, its kubelet mark left to a person.
    "BrandNewGate": _stage("alpha", False, "1.37"),
    "LaterGate": _stage("alpha", False, "1.38"),
    # Unchanged: the committed table's lock and kubelet mark carry over.
    "SidecarContainers": _stage("beta", True, "1.29", "1.32") + _stage("stable", True, "1.33"),
}


@pytest.fixture
def website(tmp_path: Path) -> Path:
    """A git directory holding PAGES the way kubernetes/website lays them out."""
    pages = tmp_path / "work" / GATES_DIR
    pages.mkdir(parents=True)
    for title, stages in PAGES.items():
        text = (_page(title, _stage("alpha", False, "1.10"), removed=True)
                if stages == "removed" else _page(title, stages))
        (pages / f"{title}.md").write_text(text)
    work = tmp_path / "work"
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "pages"], check=True)
    return work / ".git"


def _run(website: Path, *args: str) -> list[str]:
    done = subprocess.run([sys.executable, str(SCRIPT), "--git-dir", str(website),
                           "--version", "1.37", *args], check=True, capture_output=True,
                          text=True, cwd=REPO,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    return done.stdout.splitlines()


def test_the_table_is_the_release_s_gates(website: Path) -> None:
    assert _run(website) == [
        "AllAlpha false ALPHA",
        "AllBeta false BETA",
        "KubeletPSI true GA locked kubelet",
        "MemoryQoS true BETA kubelet",
        "SidecarContainers true GA locked kubelet",
        "KMSv1 false DEPRECATED locked",
        "BrandNewGate false ALPHA ?",
    ]


def test_the_diff_names_what_the_release_changed(website: Path) -> None:
    lines = _run(website, "--diff")
    assert "- WinDSR (not in the release)" in lines
    assert "- GangScheduling (not in the release)" in lines
    assert not any("LaterGate" in line for line in lines)
    assert [line for line in lines if line.startswith("+")] == [
        "+ BrandNewGate GateSpec(default=False, stage='ALPHA', locked=False, kubelet=False)"]
    assert any(line.startswith("~ KubeletPSI") and line.endswith("(lock inferred)")
               for line in lines)
    assert not any(line.startswith(("~ SidecarContainers", "~ AllAlpha")) for line in lines)
