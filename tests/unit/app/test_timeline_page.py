"""The timeline page's data (page_data), its HTML (page_html), ``trace html`` and the
/debug/timeline resource, on recorded traces. The browser tests are in
tests/e2e/test_timeline_page.py."""

from __future__ import annotations

import http.client
import json
import re
import shutil
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import falcon
import falcon.testing
import pytest

# The kubelet's lane groups and titles, and its summaries, back-offs and pods:
import actors.app.tools.kubelet_labels
import actors.app.tools.kubelet_plugin  # noqa: F401
from actors.app.http.auth import AuthSettings, KubeletAuth
from actors.app.http.server import ANY_PORT, DISABLED, MAIN, KubeletHTTPServer
from actors.app.http.timeline import TIMELINE_PATH, LiveTrace, add_timeline_route
from actors.app.http.tls import TLSSettings, server_context, serving_pair
from actors.app.tools.page_data import clip_value, page_data
from actors.app.tools.page_html import render_page
from actors.app.tools.perfetto import export_perfetto
from actors.app.tools.trace_cli import main as cli_main
from actors.core.trace.reader import read_trace
from actors.core.trace.writer import TraceWriter
from tests.unit.app.test_http_server import FakeView

TRACES = Path(__file__).resolve().parents[2] / "traces"
THREE_PODS = TRACES / "drill-kill-probes-dead-letter"
RESTART = TRACES / "restart-and-remove"


def _data(path: Path) -> dict[str, Any]:
    return page_data(read_trace(path))


def _page_json(page: str) -> Any:
    found = re.search(r'<script id="timeline-data" type="application/json">(.*?)</script>',
                      page, re.S)
    assert found is not None
    return json.loads(found.group(1))


def test_every_delivery_is_a_message_with_its_cause_and_lanes() -> None:
    trace = read_trace(THREE_PODS)
    data = page_data(trace)
    msgs, lanes = data["msgs"], data["lanes"]
    recorded = {r["id"]: r for r in trace.records if r["k"] == "msg"}
    assert sorted(msgs["id"]) == sorted(recorded)
    assert msgs["ts"] == sorted(msgs["ts"])
    for n, id in enumerate(msgs["id"]):
        parent = recorded[id]["parent"]
        cause = msgs["cause"][n]
        assert (msgs["id"][cause] if cause >= 0 else None) == parent
        if not recorded[id].get("dead"):
            assert lanes["actor"][msgs["to"][n]] == recorded[id]["to"]
    assert {"supervisor", "pleg", "status", "probes"} <= set(lanes["name"])


def test_spans_are_the_perfetto_exports_own() -> None:
    trace = read_trace(THREE_PODS)
    data = page_data(trace)
    exported = export_perfetto(trace)["traceEvents"]
    kinds = data["spanKinds"]
    for kind in ("handler", "call", "backoff"):
        ours = sorted((data["strings"][name], ts) for name, ts, k in
                      zip(data["spans"]["name"], data["spans"]["ts"], data["spans"]["kind"],
                          strict=True) if kinds[k] == kind)
        theirs = [e for e in exported if e.get("ph") == "X"
                  and str(e.get("cat")).split(",")[0] == kind]
        assert len(ours) == len(theirs) > 0, kind
    names = {data["strings"][n] for n in data["spans"]["name"]}
    assert "sync" in names  # a pod worker's RunPending, as the kubelet's labels title it
    assert any(n.startswith("requeue") for n in names)  # its back-off lane


def test_pod_lanes_and_pod_sets() -> None:
    data = _data(THREE_PODS)
    pods = dict(zip(data["pods"]["name"], range(len(data["pods"]["name"])), strict=True))
    assert set(pods) == {"alpha-drill-node", "beta-drill-node", "gamma-drill-node"}
    lanes = data["lanes"]
    alpha = pods["alpha-drill-node"]
    alpha_lanes = [name for name, pod in zip(lanes["name"], lanes["pod"], strict=True)
                   if pod == alpha]
    assert alpha_lanes and all("alpha-drill-node" in name for name in alpha_lanes)
    groups = {lanes["name"][n]: data["strings"][g] for n, g in enumerate(lanes["group"])}
    assert groups["supervisor"] == "kubelet"
    assert groups[alpha_lanes[0]] == "pod workers"
    to_alpha = [n for n, to in enumerate(data["msgs"]["to"]) if lanes["pod"][to] == alpha]
    assert to_alpha
    assert all(alpha in data["podSets"][data["msgs"]["pods"][n]] for n in to_alpha)


def test_bodies_are_cut_and_shared() -> None:
    assert clip_value("x" * 1000).endswith("…") and len(clip_value("x" * 1000)) == 300
    assert clip_value(list(range(50)))[-1] == "… 30 more"
    deep: dict[str, Any] = {"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}}}}}}}
    assert clip_value(deep)["a"]["b"]["c"]["d"]["e"]["f"] == "{…}"
    data = _data(RESTART)
    assert len(data["bodies"]) < len(data["msgs"]["body"])  # equal bodies are stored once


def test_the_page_inlines_everything_and_its_data_cannot_close_the_script() -> None:
    data = _data(RESTART)
    data["bodies"][0] = {"text": "</script><script>alert(1)</script>"}
    page = render_page(data)
    assert "/*SCRIPT*/" not in page and "/*STYLE*/" not in page and "/*DATA*/" not in page
    assert page.count("</script>") == 2  # the data's and the code's, nothing from the data
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)
    assert _page_json(page)["bodies"][0]["text"] == "</script><script>alert(1)</script>"


def test_trace_html_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "timeline.html"
    assert cli_main(["html", str(THREE_PODS), str(out)]) == 0
    assert "wrote" in capsys.readouterr().err
    assert _page_json(out.read_text())["msgs"]["id"]
    assert cli_main(["html", str(THREE_PODS), "--output-file", str(out)]) == 0
    assert "wrote" in capsys.readouterr().err
    assert cli_main(["html", str(THREE_PODS)]) == 2
    assert "name the file to write" in capsys.readouterr().err
    assert cli_main(["html", str(tmp_path / "nothing"), str(out)]) == 1
    assert "no such trace" in capsys.readouterr().err


def _written(directory: str) -> LiveTrace:
    """A trace whose writer has nothing held back (a directory of finished files)."""
    return LiveTrace(directory, lambda: True)


def _client(trace: LiveTrace | None) -> falcon.testing.TestClient:
    app: falcon.App[falcon.Request, falcon.Response] = falcon.App()
    add_timeline_route(app, trace)
    return falcon.testing.TestClient(app)


def test_debug_timeline_serves_the_kubelets_trace(tmp_path: Path) -> None:
    shutil.copytree(RESTART, tmp_path / "trace")
    result = _client(_written(str(tmp_path / "trace"))).simulate_get(TIMELINE_PATH)
    assert result.status_code == 200
    assert result.headers["content-type"].startswith("text/html")
    assert _page_json(result.text)["lanes"]["name"]


def test_debug_timeline_without_a_trace_says_how_to_record_one(tmp_path: Path) -> None:
    result = _client(None).simulate_get(TIMELINE_PATH)
    assert result.status_code == 404
    assert "--trace-dir" in result.text
    result = _client(_written(str(tmp_path / "missing"))).simulate_get(TIMELINE_PATH)
    assert result.status_code == 503
    assert "no such trace" in result.text


@dataclass(frozen=True)
class Ping:
    """A message for a live writer to record."""

    n: int


def test_debug_timeline_has_the_writer_write_what_it_holds_first(tmp_path: Path) -> None:
    """A delivery recorded just before the request is on the page: the writer would hold
    it for up to its write_every otherwise."""
    writer = TraceWriter(tmp_path / "trace")
    try:
        writer.delivery(1, "", 1, "pinged", 1, None, Ping(1), dead=False)
        writer.begin(1, "pinged", 1)
        writer.end(1, "pinged", 1, None)
        result = _client(LiveTrace(str(tmp_path / "trace"), writer.flush)
                         ).simulate_get(TIMELINE_PATH)
        assert result.status_code == 200
        assert _page_json(result.text)["msgs"]["id"] == [1]
    finally:
        writer.close()


def _main_port_status(tmp_path: Path, settings: AuthSettings, trace_dir: str) -> int:
    """GET /debug/timeline from a main port (HTTPS) with ``settings``' authentication."""
    tls = TLSSettings(cert_dir=str(tmp_path / "pki"), node_name="node-a",
                      node_ips=("127.0.0.1",))
    cert, key = serving_pair(tls)
    server = KubeletHTTPServer(FakeView(tmp_path), port=ANY_PORT, read_only_port=DISABLED,
                               healthz_port=DISABLED,
                               tls=(server_context(tls, cert, key), cert, key),
                               auth=KubeletAuth(settings, None), trace=_written(trace_dir))
    server.start()
    try:
        conn = http.client.HTTPSConnection("127.0.0.1", server.bound_ports[MAIN], timeout=30,
                                           context=ssl.create_default_context(cafile=cert))
        try:
            conn.request("GET", TIMELINE_PATH)
            response = conn.getresponse()
            response.read()
            return response.status
        finally:
            conn.close()
    finally:
        server.stop()


def test_the_main_port_authenticates_debug_timeline_as_any_path(tmp_path: Path) -> None:
    shutil.copytree(RESTART, tmp_path / "trace")
    trace_dir = str(tmp_path / "trace")
    assert _main_port_status(tmp_path, AuthSettings("node-a", anonymous=False), trace_dir) == 401
    assert _main_port_status(tmp_path, AuthSettings("node-a"), trace_dir) == 200


def test_a_trace_with_only_its_header_is_an_empty_page(tmp_path: Path) -> None:
    """What /debug/timeline shows of a kubelet that has only just started."""
    header = (RESTART / "trace-000001.jsonl").read_text().splitlines()[0]
    (tmp_path / "trace-000001.jsonl").write_text(header + "\n")
    data = page_data(read_trace(tmp_path))
    assert data["msgs"]["id"] == [] and data["spans"]["ts"] == []
    assert _page_json(render_page(data))["lanes"]["name"] == ["timers"]
