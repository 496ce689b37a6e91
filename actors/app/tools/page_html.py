"""The timeline page as one self-contained HTML document: its script, style and data inline.

The page's files (timeline.html, timeline.js, timeline.css) are package data in
actors/app/tools/timeline_page/; the HTML holds three markers the generator fills: the
style, the script and the data (actors.app.tools.page_data's model, as JSON). Nothing is
fetched when the page opens: no CDN, no second request.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import msgspec

from actors.app.tools.page_data import page_data
from actors.core.trace.reader import Trace

_PACKAGE = "actors.app.tools.timeline_page"
_STYLE, _SCRIPT, _DATA, _TITLE = "/*STYLE*/", "/*SCRIPT*/", "/*DATA*/", "<!--TITLE-->"


def _asset(name: str) -> str:
    return resources.files(_PACKAGE).joinpath(name).read_text(encoding="utf-8")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_page(data: dict[str, Any]) -> str:
    """The HTML document showing ``data`` (a page_data model)."""
    # "<" only occurs inside JSON strings, where \u003c means the same: the data can never
    # close its <script> element.
    encoded = msgspec.json.encode(data).decode().replace("<", "\\u003c")
    page = _asset("timeline.html")
    # The script and style are ours and hold no markers; the data goes in last.
    page = page.replace(_TITLE, _escape(str(data.get("title", ""))))
    page = page.replace(_STYLE, _asset("timeline.css"))
    page = page.replace(_SCRIPT, _asset("timeline.js").replace("</", "<\\/"))
    return page.replace(_DATA, encoded, 1)


def trace_page(trace: Trace, title: str = "") -> str:
    """The timeline page of ``trace``."""
    return render_page(page_data(trace, title))
