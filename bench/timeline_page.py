"""How long the timeline page takes with a large trace: written, loaded, answering.

    .venv/bin/python -m bench.timeline_page [--messages N]

A trace of N messages (default 100,000) is made by repeating a recorded one
(tests.traces.large), written as a page with ``trace html``, and opened in Debian's
chromium (tests.e2e.browser). Prints how long ``trace html`` took and how big the page is,
when the page said it was ready (from the navigation's start, as the page measures it, and
as the driver waited), how long one frame of the whole trace takes (and the page's own
drawing in it; the rest is the browser's rasterizing), and how long a pod filter and a click
on a message took to answer.
Nothing here asserts on time: tests/e2e/test_timeline_page.py checks that it works.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from actors.core.trace.reader import read_trace
from tests.e2e.browser import READY, chromium_page
from tests.traces.large import write_large_trace

REPO = Path(__file__).resolve().parents[1]
DEADLINE_MS = 300_000


def _a_caused_message(trace_dir: Path) -> int:
    for record in read_trace(trace_dir).records:
        if (record["k"] == "msg" and record["type"] == "PodWorkerDone"
                and record["parent"] is not None):
            return int(record["id"])
    raise SystemExit(f"{trace_dir}: no PodWorkerDone to click")


def measure(messages: int, work: Path) -> list[tuple[str, str]]:
    trace_dir, page_file = work / "trace", work / "timeline.html"
    made = write_large_trace(trace_dir, messages)
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "bin.main", "trace", "html", str(trace_dir),
                    "-o", str(page_file)], cwd=REPO, check=True, capture_output=True)
    written = time.monotonic() - began
    clicked = _a_caused_message(trace_dir)
    with chromium_page() as browsing:
        page = browsing.page
        began = time.monotonic()
        page.goto(page_file.as_uri(), timeout=DEADLINE_MS)
        page.wait_for_selector(READY, state="attached", timeout=DEADLINE_MS)
        ready = time.monotonic() - began
        in_page = page.evaluate("document.body.dataset.loadMs")
        script = page.evaluate("document.body.dataset.scriptMs")
        frame = page.evaluate("""async () => {
            const began = performance.now();
            document.getElementById('fit').click();
            await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
            return [performance.now() - began, window.timeline.drawTimes()];
        }""")
        option = page.locator("#pod option").nth(1).inner_text()
        before = page.inner_text("#status")
        began = time.monotonic()
        page.select_option("#pod", label=option)
        page.wait_for_function("b => document.querySelector('#status').textContent !== b",
                               arg=before, timeout=DEADLINE_MS)
        filtered = time.monotonic() - began
        point = page.evaluate("id => window.timeline.locate(id)", clicked)
        began = time.monotonic()
        page.mouse.click(point["x"], point["y"])
        page.wait_for_selector("#details ol.chain li", timeout=DEADLINE_MS)
        answered = time.monotonic() - began
    return [
        ("messages", f"{made}"),
        ("trace html", f"{written:.1f} s"),
        ("page size", f"{page_file.stat().st_size / 1e6:.1f} MB"),
        ("ready (driver)", f"{ready:.2f} s"),
        ("ready (page, from navigation start)", f"{in_page} ms"),
        ("of which the page's script", f"{script} ms"),
        ("a frame of the whole trace", f"{frame[0]:.0f} ms"),
        ("of which drawing spans, arrows", f"{frame[1]['spans']:.0f} ms, "
                                           f"{frame[1]['arrows']:.0f} ms"),
        ("pod filter", f"{filtered * 1000:.0f} ms"),
        ("click -> fields and chain", f"{answered * 1000:.0f} ms"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="timeline-bench-") as work:
        rows = measure(args.messages, Path(work))
    table = Table(title="timeline page")
    table.add_column("what")
    table.add_column("measured", justify="right")
    for row in rows:
        table.add_row(*row)
    Console().print(table)


if __name__ == "__main__":
    main()
