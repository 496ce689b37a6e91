"""--runonce's -o json and -o yaml print the same document, rendered as every command
renders JSON and YAML (actors.app.output_format)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml_rs

from actors.app.config.flags import parse_flags
from actors.app.report import document, print_document
from actors.app.runonce import PodOutcome
from runtime.errors import ManifestError
from runtime.pod.model import Container, ObjectMeta, Pod, PodSpec
from runtime.status.types import PodStatus

OUTCOMES = (
    PodOutcome(Pod(metadata=ObjectMeta(name="web", namespace="default", uid="u1"),
                   spec=PodSpec(containers=(Container(name="c", image="busybox"),))),
               PodStatus(phase="Running", pod_ip="10.88.0.9"), ok=True),
    PodOutcome(Pod(metadata=ObjectMeta(name="bad", namespace="default", uid="u2"),
                   spec=PodSpec(containers=(Container(name="c", image="busybox"),))),
               PodStatus(phase="Failed", reason="NodeAffinity"), ok=False, error="refused"),
)
ERRORS = (ManifestError("m.yaml", "spec.containers", "required"),)


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_json_and_yaml_print_the_same_document(output: str) -> None:
    out = io.StringIO()
    print_document(OUTCOMES, ERRORS, output, out)
    text = out.getvalue()
    printed: dict[str, Any] = (json.loads(text) if output == "json"
                               else yaml_rs.loads(text, parse_datetime=False))  # type: ignore[assignment]
    assert printed == json.loads(json.dumps(document(OUTCOMES, ERRORS)))
    assert [(p["pod"]["metadata"]["name"], p["ok"]) for p in printed["pods"]] == [
        ("web", True), ("bad", False)]
    assert printed["pods"][0]["pod"]["status"]["podIP"] == "10.88.0.9"
    assert printed["errors"] == [{"file": "m.yaml", "field": "spec.containers",
                                  "error": "required"}]
    assert printed["ok"] is False


@pytest.mark.parametrize("output", ["table", "json", "yaml"])
def test_runonce_takes_every_format_the_report_prints(output: str, tmp_path: Path) -> None:
    flags = parse_flags(["--pod-manifest-path", str(tmp_path), "--runonce", "-o", output])
    assert flags.output == output
