"""Debian's chromium, driven by Playwright, for the timeline page's tests.

Playwright's own browser download cannot reach the internet here: the tests launch
/usr/bin/chromium (scripts/setup.sh installs it) with everything that would phone home
switched off, and record every request the page makes, so a test can check that the page
fetched nothing but itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from playwright.sync_api import Page, Request, sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
READY = "body[data-ready='1']"


@dataclass
class Browsing:
    """An open page, the URLs it requested and the errors its scripts raised."""

    page: Page
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@contextlib.contextmanager
def chromium_page(width: int = 1400, height: int = 900) -> Iterator[Browsing]:
    """A page in a fresh chromium; the browser is closed when the block ends."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            browsing = Browsing(page)

            def requested(request: Request) -> None:
                browsing.requests.append(request.url)

            page.on("request", requested)
            page.on("pageerror", lambda error: browsing.errors.append(str(error)))
            yield browsing
        finally:
            browser.close()
