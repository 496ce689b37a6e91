"""The timeline page tells what happened to the pods, in words, on a real containerd.

A daemon with tracing on runs three pods: one whose container exits 42 over and over (a
crash loop), one whose readiness probe fails with a recognizable output, one deleted. Its
/debug/timeline, opened in headless chromium (Debian's, driven as tests/e2e/browser.py
does) at 1400x900, must show in its text the exit code, the probe's output and the
deletion, and lay out its labels so that none overlaps another: the test measures every
label's box (getBoundingClientRect) and checks them pairwise.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.app.tools.page_html import trace_page
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.browser import READY, Browsing, chromium_page
from tests.e2e.daemon import Daemon, remove_every_pod, stopped_after
from tests.e2e.test_daemon import SERVE, manifest
from tests.helpers import wait_for
from tests.unit.app.test_timeline_story import crash_loop_unready_and_deleted

pytestmark = pytest.mark.e2e

PROBE_SAYS = "backend not ready: 503 from /healthz"
UNREADY = f"""    readinessProbe:
      exec: {{command: ["sh", "-c", "echo '{PROBE_SAYS}'; exit 1"]}}
      periodSeconds: 1
"""
LOAD_DEADLINE_MS = 120_000
# Resolves once the page has drawn what a click asked for (it draws on the next frame).
DRAWN = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"

# Every label the page shows: the lanes' names, the story's labels, the legend's entries.
LABEL_BOXES = """() => Array.from(
    document.querySelectorAll('#labels .lane, .fact-label, .legend-item'))
  .filter((e) => e.offsetParent !== null && getComputedStyle(e).visibility !== 'hidden')
  .map((e) => { const r = e.getBoundingClientRect();
                return {text: e.textContent, left: r.left, top: r.top, right: r.right,
                        bottom: r.bottom}; })
  .filter((b) => b.right > b.left && b.bottom > b.top)"""


def overlapping(boxes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The pairs of label boxes that intersect (touching edges do not)."""
    found = []
    for n, a in enumerate(boxes):
        for b in boxes[n + 1:]:
            if (a["left"] < b["right"] - 0.5 and b["left"] < a["right"] - 0.5
                    and a["top"] < b["bottom"] - 0.5 and b["top"] < a["bottom"] - 0.5):
                found.append((a["text"], b["text"]))
    return found


def labels_apart(browsing: Browsing) -> list[dict[str, Any]]:
    """The page's label boxes, checked pairwise: none overlaps another."""
    boxes: list[dict[str, Any]] = browsing.page.evaluate(LABEL_BOXES)
    assert overlapping(boxes) == [], overlapping(boxes)
    return boxes


@contextlib.contextmanager
def story_page(tmp_path: Path) -> Iterator[Browsing]:
    """The fake runtime's crash loop, probe and deletion (tests/unit/app/test_timeline_story)
    as a page, loaded in chromium at 1400x900."""
    out = tmp_path / "timeline.html"
    out.write_text(trace_page(crash_loop_unready_and_deleted(), "story"), encoding="utf-8")
    with chromium_page(1400, 900) as browsing:
        browsing.page.goto(out.as_uri())
        browsing.page.wait_for_selector(READY, state="attached", timeout=LOAD_DEADLINE_MS)
        yield browsing


def test_story_labels_never_overlap_at_any_zoom(tmp_path: Path) -> None:
    """The fake runtime's crash loop, probe and deletion (tests/unit/app/test_timeline_story),
    at the whole trace and zoomed out and in: labels that have no room are left out."""
    with story_page(tmp_path) as browsing:
        page = browsing.page
        page.wait_for_selector(".fact-label", timeout=LOAD_DEADLINE_MS)
        text = page.evaluate("document.body.innerText")
        for said in ("c: exited 42 (Error)", "back-off 20s", "readiness failed: db is down",
                     "deleted (grace 30s)"):
            assert said in text, (said, text)
        labels_apart(browsing)
        for button in ("#zoom-out", "#zoom-out", "#zoom-out", "#fit", "#zoom-in", "#zoom-in"):
            page.click(button)
            page.evaluate(DRAWN)
            labels_apart(browsing)
        assert browsing.errors == []


# The canvas pixels drawn below the last lane (device pixels with any alpha): nothing lives
# there, so anything drawn is a line to nowhere.
INKED_BELOW_THE_LANES = """() => {
  const canvas = document.getElementById('canvas');
  const lanes = Array.from(document.querySelectorAll('#labels .lane'));
  const bottom = Math.max(...lanes.map((e) => e.getBoundingClientRect().bottom));
  const top = Math.ceil((bottom - canvas.getBoundingClientRect().top + 2) * devicePixelRatio);
  if (top >= canvas.height) return 0;
  const pixels = canvas.getContext('2d').getImageData(0, top, canvas.width,
                                                      canvas.height - top).data;
  let inked = 0;
  for (let k = 3; k < pixels.length; k += 4) if (pixels[k] !== 0) inked++;
  return inked;
}"""


def test_no_line_runs_past_the_lanes_and_the_axis_reads_alike(tmp_path: Path) -> None:
    """Messages to a lane not shown are stubs, not lines down the whole page (the
    unlabelled vertical lines the lanes used to fill with); the axis's labels share one
    unit and one precision (0s, 5s, 10s, not 0.0µs, 5.000s, 10.0s)."""
    with story_page(tmp_path) as browsing:
        page = browsing.page
        page.evaluate(DRAWN)
        assert page.evaluate(INKED_BELOW_THE_LANES) == 0
        labels: list[str] = page.evaluate("window.timeline.axisLabels()")
        assert labels[:3] == ["0s", "5s", "10s"], labels
        shapes = {(re.sub(r"[0-9]", "", label), len(label.split(".")[-1]) if "." in label
                   else 0) for label in labels}
        assert len(shapes) == 1, labels
        assert browsing.errors == []


def restarts(daemon: Daemon, name: str) -> int:
    pod = daemon.pod(name) or {}
    statuses = pod.get("status", {}).get("containerStatuses") or [{}]
    return int(statuses[0].get("restartCount", 0))


def test_the_timeline_tells_a_crash_loop_an_unready_pod_and_a_deletion(
        containerd: EmbeddedContainerd, cri: CRIClient) -> None:
    workdir = containerd.base_dir / "timeline-story" / uuid.uuid4().hex[:8]
    manifests = workdir / "manifests"
    manifests.mkdir(parents=True)
    (manifests / "crash.yaml").write_text(manifest("crash", "exit 42"))
    (manifests / "unready.yaml").write_text(manifest("unready", SERVE, UNREADY))
    (manifests / "doomed.yaml").write_text(manifest("doomed", SERVE))
    daemon = Daemon(workdir, manifests, "--container-runtime-endpoint", containerd.endpoint,
                    "--trace-dir", str(workdir / "trace"))
    with stopped_after(daemon):
        daemon.start()
        daemon.wait_running("doomed-e2e-node")
        daemon.wait_running("unready-e2e-node")
        (manifests / "doomed.yaml").unlink()
        wait_for(lambda: daemon.pod("doomed-e2e-node") is None, 60.0, "doomed to go")
        # The crash loop: exited 42, started again, exited again, waited out a back-off
        # (10 s), started again.
        wait_for(lambda: restarts(daemon, "crash-e2e-node") >= 2, 90.0, "two restarts of crash")
        url = f"http://127.0.0.1:{daemon.read_only_port}/debug/timeline"
        with chromium_page(1400, 900) as browsing:
            page = browsing.page
            page.goto(url, timeout=LOAD_DEADLINE_MS)
            page.wait_for_selector(READY, state="attached", timeout=LOAD_DEADLINE_MS)
            page.wait_for_selector(".fact-label", timeout=LOAD_DEADLINE_MS)
            text = page.evaluate("document.body.innerText")
            page.screenshot(path=str(workdir / "timeline.png"))  # for a person to look at
            assert "main: exited 42 (Error)" in text, text
            assert f"readiness failed: {PROBE_SAYS}" in text, text
            assert "deleted (grace 5s)" in text, text
            assert "back-off 10s" in text, text
            lanes = page.locator("#labels .lane").all_inner_texts()
            assert {"crash-e2e-node", "crash-e2e-node · main", "unready-e2e-node",
                    "unready-e2e-node · main readiness", "doomed-e2e-node"} <= set(lanes), lanes
            boxes = labels_apart(browsing)
            assert sum(1 for b in boxes if b["text"]) > 20, boxes
            # Routine traffic is folded, and drawn when asked for.
            shown = page.evaluate("window.timeline.shownMessages()")
            page.check("#routine")
            page.wait_for_function("n => window.timeline.shownMessages() > n", arg=shown)
            assert browsing.errors == []
            assert browsing.requests == [url]
        remove_every_pod(daemon)
