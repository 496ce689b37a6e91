"""klog's --vmodule on loguru: the flag reads component-base's ``pattern=N,...`` (refusing
in its words), a pattern matches a source file's base name without .py (its whole path
when the pattern has a /) as klog's matches Go files, the first match wins, and a matching
file's lines are written at its own verbosity while the others keep --v's."""

from __future__ import annotations

import io
import sys

import pytest
from loguru import logger

from actors.app.config.flags import parse_flags
from actors.app.config.verbosity import VModule
from actors.app.logging_setup import configure_logging

BASE = ["--pod-manifest-path", "/nonexistent"]


@pytest.mark.parametrize(("text", "patterns"), [
    ("pod_worker=4", (("pod_worker", 4),)),
    ("pod_*=5,prober=4,", (("pod_*", 5), ("prober", 4))),
    # klog drops a pattern at 0: harmless, but no point
    ("prober=0,pro*=4", (("pro*", 4),)),
    ("", ()),
])
def test_the_flag_reads_pattern_equals_n(text: str, patterns: tuple[tuple[str, int]]) -> None:
    assert parse_flags([*BASE, f"--vmodule={text}"]).vmodule == patterns


@pytest.mark.parametrize(("text", "why"), [
    ("prober", '"prober" does not have the pattern=N format'),
    ("=4", '"=4" does not have the pattern=N format'),
    ("a=1=2", '"a=1=2" does not have the pattern=N format'),
    ("a=-1", 'parsing verbosity in "a=-1": strconv.ParseUint: parsing "-1": invalid syntax'),
    ("a=2147483648", 'parsing verbosity in "a=2147483648": strconv.ParseUint: parsing '
                     '"2147483648": value out of range'),
])
def test_a_bad_vmodule_is_refused_in_component_base_s_words(
        text: str, why: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_flags([*BASE, "--vmodule", text])
    assert (f'invalid argument "{text}" for "--vmodule" flag: {why}\n'
            in capsys.readouterr().err)


@pytest.mark.parametrize(("patterns", "path", "level"), [
    ((("pod_worker", 4),), "/src/actors/kubelet/pod_worker.py", "DEBUG"),
    ((("pod_*", 5),), "/src/actors/kubelet/pod_worker.py", "TRACE"),
    ((("pod_?orker", 4),), "/src/actors/kubelet/pod_worker.py", "DEBUG"),
    ((("pod_[vw]orker", 4),), "/src/actors/kubelet/pod_worker.py", "DEBUG"),
    ((("pod_[^w]orker", 4),), "/src/actors/kubelet/pod_worker.py", "INFO"),
    ((("pod", 4),), "/src/actors/kubelet/pod_worker.py", "INFO"),  # the whole name
    ((("pod_worker.py", 4),), "/src/actors/kubelet/pod_worker.py", "INFO"),  # no extension
    ((("kubelet/pod_worker", 4),), "/src/actors/kubelet/pod_worker.py", "INFO"),
    ((("/src/*/kubelet/pod_worker", 4),), "/src/actors/kubelet/pod_worker.py", "DEBUG"),
    ((("*", 3), ("pod_*", 5)), "/src/actors/kubelet/pod_worker.py", "INFO"),  # first wins
    ((("prober", 5),), "/src/actors/kubelet/pod_worker.py", "WARNING"),  # --log-level's
])
def test_a_file_s_level_is_its_first_matching_pattern_s(
        patterns: tuple[tuple[str, int], ...], path: str, level: str) -> None:
    default = "WARNING" if patterns == (("prober", 5),) else "INFO"
    assert VModule(patterns, default).level_of(path) == level


def test_the_lines_of_a_matching_file_are_written_at_its_verbosity(
        monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    this_file = __file__.rpartition("/")[2].removesuffix(".py")
    try:
        configure_logging("INFO", vmodule=((this_file, 4),))
        logger.debug("a debug line of the matching file")
        logger.trace("a trace line it does not reach")
        configure_logging("INFO", vmodule=(("other_file", 5),))
        logger.debug("a debug line of a file no pattern matches")
        logger.info("an info line")
    finally:
        logger.remove()
        logger.add(sys.__stderr__ or stream)  # loguru's default sink, as other tests have it
    written = stream.getvalue()
    assert "a debug line of the matching file" in written
    assert "a trace line it does not reach" not in written
    assert "a debug line of a file no pattern matches" not in written
    assert "an info line" in written
