"""The timeline page in a real browser: from ``trace html`` and from a daemon's
/debug/timeline, what a user sees (lanes, a pod filter, a search, a message's fields and
causal chain), and a trace of 100,000 messages loading and answering.

Chromium (scripts/setup.sh) is driven by Playwright (tests/e2e/browser.py). Waits have
deadlines and assert nothing on speed: the 100,000-message test prints its load time, and
bench/timeline_page.py measures it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from actors.core.trace.reader import read_trace
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.browser import READY, Browsing, chromium_page
from tests.e2e.daemon import REPO, Daemon
from tests.e2e.test_daemon import manifest
from tests.traces.large import pods_in, write_large_trace

pytestmark = pytest.mark.e2e

TRACES = REPO / "tests" / "traces"
THREE_PODS = TRACES / "drill-kill-probes-dead-letter"
LOAD_DEADLINE_MS = 180_000  # generous: the page reports readiness, the test waits for it
ANSWER_DEADLINE_MS = 60_000


def trace_html(trace: Path, out: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "bin.main", "trace", "html", str(trace),
                           "--output-file", str(out)], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def lanes(page: Any) -> list[str]:
    labels: list[str] = page.locator("#labels .lane").all_inner_texts()
    return labels


def a_handled_message(trace_dir: Path, type_name: str, sender_prefix: str) -> tuple[int, int]:
    """A delivery of ``type_name`` from an actor named ``sender_prefix``..., handled, with a
    cause: (its id, its cause's id)."""
    for record in read_trace(trace_dir).records:
        if (record["k"] == "msg" and record["type"] == type_name and not record["dead"]
                and str(record["from"]).startswith(sender_prefix)
                and record["parent"] is not None):
            return record["id"], record["parent"]
    raise AssertionError(f"no {type_name} from {sender_prefix}... in {trace_dir}")


def sender_pod(trace_dir: Path, id: int) -> str:
    """The name of the pod whose worker sent delivery ``id``."""
    records = read_trace(trace_dir).records
    (sender,) = (r["from"] for r in records if r["k"] == "msg" and r["id"] == id)
    return pods_in(records)[str(sender).removeprefix("pod/")]


def open_page(browsing: Browsing, url: str) -> float:
    """Open ``url`` and wait for the page to say it is ready; returns the seconds it took."""
    began = time.monotonic()
    browsing.page.goto(url, timeout=LOAD_DEADLINE_MS)
    browsing.page.wait_for_selector(READY, state="attached", timeout=LOAD_DEADLINE_MS)
    return time.monotonic() - began


def click_message(browsing: Browsing, id: int) -> None:
    """Click the arrow of delivery ``id`` on the canvas, where the page draws it."""
    page = browsing.page
    point = page.evaluate("id => window.timeline.locate(id)", id)
    assert point is not None, f"message #{id} is not drawn"
    page.mouse.click(point["x"], point["y"])
    page.wait_for_function(
        "id => (document.querySelector('#details .type') || {}).textContent?.endsWith('#' + id)",
        arg=id, timeout=ANSWER_DEADLINE_MS)


def choose_pod(browsing: Browsing, name: str) -> None:
    page = browsing.page
    label = next(t for t in page.locator("#pod option").all_inner_texts() if t.startswith(name))
    before = page.inner_text("#status")
    page.select_option("#pod", label=label)
    page.wait_for_function("before => document.querySelector('#status').textContent !== before",
                           arg=before, timeout=ANSWER_DEADLINE_MS)


def search(browsing: Browsing, text: str) -> list[str]:
    page = browsing.page
    page.fill("#search", text)
    page.press("#search", "Enter")
    page.wait_for_function("document.querySelector('#results-count').textContent.includes('match')",
                           timeout=ANSWER_DEADLINE_MS)
    results: list[str] = page.locator("#results li").all_inner_texts()
    return results


def check_details(browsing: Browsing, id: int, cause: int) -> None:
    """The details of delivery ``id`` show its fields and a causal chain through ``cause``."""
    page = browsing.page
    assert page.inner_text("#details pre.fields").strip().startswith("{")
    chain = page.locator("#details ol.chain li").all_inner_texts()
    assert len(chain) >= 2, chain
    assert chain[-1].startswith(f"#{id} ") and chain[-2].startswith(f"#{cause} "), chain


def test_a_trace_html_file_shows_lanes_filters_searches_and_explains(tmp_path: Path) -> None:
    out = tmp_path / "timeline.html"
    trace_html(THREE_PODS, out)
    message, cause = a_handled_message(THREE_PODS, "PodWorkerDone", "pod/")
    with chromium_page() as browsing:
        page = browsing.page
        open_page(browsing, out.as_uri())
        shown = lanes(page)
        assert {"supervisor", "pleg", "status", "probes"} <= set(shown), shown
        pods = [lane for lane in shown if lane.startswith("pod/")]
        assert any(lane.endswith(":alpha-drill-node") for lane in pods), shown
        assert any(lane.endswith(":beta-drill-node") for lane in pods), shown

        found = search(browsing, "DeadLetter")
        assert found and all("DeadLetter" in f for f in found), found

        click_message(browsing, message)
        check_details(browsing, message, cause)
        assert "PodWorkerDone" in page.inner_text("#details .type")

        choose_pod(browsing, "alpha-drill-node")
        shown = lanes(page)
        assert any(lane.endswith(":alpha-drill-node") for lane in shown), shown
        assert not any("beta-drill-node" in lane or "gamma-drill-node" in lane
                       for lane in shown), shown
        assert "supervisor" in shown
        found = search(browsing, "drill-node")
        assert found
        assert not [f for f in found if "beta-drill-node →" in f or "→ pod/2d7e8299" in f], found
        shown_count, total = page.inner_text("#status").split(" messages")[0].split(" of ")
        assert int(shown_count) < int(total)

        assert browsing.errors == []
        assert browsing.requests == [out.as_uri()]


def test_a_trace_of_100000_messages_loads_and_answers(tmp_path: Path) -> None:
    trace_dir, out = tmp_path / "trace", tmp_path / "timeline.html"
    messages = write_large_trace(trace_dir, 100_000)
    began = time.monotonic()
    trace_html(trace_dir, out)
    written = time.monotonic() - began
    message, cause = a_handled_message(trace_dir, "PodWorkerDone", "pod/")
    with chromium_page() as browsing:
        seconds = open_page(browsing, out.as_uri())
        page = browsing.page
        in_page = int(page.evaluate("document.body.dataset.loadMs"))
        assert page.evaluate("window.timeline.messages") == messages
        answered = time.monotonic()
        choose_pod(browsing, sender_pod(trace_dir, message))
        click_message(browsing, message)
        check_details(browsing, message, cause)
        answered = time.monotonic() - answered
        print(f"\n{messages} messages: trace html {written:.1f}s, "
              f"{out.stat().st_size / 1e6:.1f} MB, page ready in {seconds:.2f}s "
              f"({in_page} ms in the page), filter and click {answered:.2f}s")
        assert browsing.errors == []
        assert browsing.requests == [out.as_uri()]


def test_the_daemon_serves_its_timeline(containerd: EmbeddedContainerd, cri: CRIClient) -> None:
    workdir = containerd.base_dir / "timeline" / uuid.uuid4().hex[:8]
    manifests = workdir / "manifests"
    manifests.mkdir(parents=True)
    trace_dir = workdir / "trace"
    (manifests / "a.yaml").write_text(manifest("alpha"))
    (manifests / "b.yaml").write_text(manifest("beta"))
    daemon = Daemon(workdir, manifests, "--container-runtime-endpoint", containerd.endpoint,
                    "--trace-dir", str(trace_dir))
    try:
        daemon.start()
        daemon.wait_running("alpha-e2e-node")
        daemon.wait_running("beta-e2e-node")
        code, body = daemon.get("/debug/timeline", port=daemon.port)  # the main port too
        assert code == 200 and "window.timeline" in body, body[:500]
        url = f"http://127.0.0.1:{daemon.read_only_port}/debug/timeline"
        with chromium_page() as browsing:
            page = browsing.page
            open_page(browsing, url)
            message, cause = a_handled_message(trace_dir, "PodWorkerDone", "pod/")
            shown = lanes(page)
            assert {"supervisor", "pleg", "status"} <= set(shown), shown
            assert any(lane.endswith(":alpha-e2e-node") for lane in shown), shown
            assert any(lane.endswith(":beta-e2e-node") for lane in shown), shown

            found = search(browsing, "UpdatePod")
            assert found and all("UpdatePod" in f for f in found), found

            page.locator("#results li").first.click()
            page.wait_for_selector("#details pre.fields", timeout=ANSWER_DEADLINE_MS)
            fields = json.loads(page.inner_text("#details pre.fields"))
            assert fields["pod"]["metadata"]["name"].endswith("-e2e-node"), fields

            click_message(browsing, message)
            check_details(browsing, message, cause)

            choose_pod(browsing, "alpha-e2e-node")
            shown = lanes(page)
            assert any(lane.endswith(":alpha-e2e-node") for lane in shown), shown
            assert not any("beta-e2e-node" in lane for lane in shown), shown
            assert all("beta-e2e-node" not in f.split(" · ")[0]
                       for f in search(browsing, "UpdatePod")), "beta's messages shown"

            assert browsing.errors == []
            assert browsing.requests == [url]
    finally:
        daemon.stop()
