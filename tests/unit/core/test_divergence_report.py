"""What a divergence report tells a developer, on toy messages (core knows no kubelet)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from actors.core.trace.names import MESSAGES
from actors.core.trace.stubs import (
    ABSENT,
    Divergence,
    DivergenceFound,
    FieldDiff,
    Step,
    differing_fields,
    plain,
)


@dataclass(frozen=True, slots=True)
class Light:
    colour: str
    lit: bool


@dataclass(frozen=True, slots=True)
class Board:
    name: str
    lights: tuple[Light, ...]


DELIVERY = {"id": 7, "to": "panel", "inc": 2, "type": "Tick", "from": "timer", "seq": 3}
RECORDED = Board("hall", (Light("red", True), Light("green", False)))


def _step(sent: list[object], calls: tuple[dict[str, object], ...] = ()) -> Step:
    records = [{"to": "lamp", "type": MESSAGES.name_of(m), "body": plain(m)} for m in sent]
    return Step(DELIVERY, records, list(calls), [])


def _divergence(step: Step, to: str, message: object) -> Divergence:
    with pytest.raises(DivergenceFound) as found:
        step.expect_send(to, message)
    return found.value.divergence


def _rows(lines: list[str]) -> dict[str, list[str]]:
    """The field table of a report: path -> [recorded, replayed]."""
    start = next(i for i, line in enumerate(lines) if line.split("|")[0].strip() == "field")
    rows: dict[str, list[str]] = {}
    for line in lines[start + 2:]:
        if "|" not in line:
            break
        path, recorded, replayed = (cell.strip() for cell in line.split("|"))
        rows[path] = [recorded, replayed]
    return rows


def test_a_changed_field_is_one_row_recorded_against_replayed() -> None:
    replayed = Board("hall", (Light("red", True), Light("green", True)))
    div = _divergence(_step([RECORDED]), "lamp", replayed)
    lines = div.describe()
    assert lines[0] == ("divergence at delivery #7: panel (incarnation 2) handling Tick from "
                        "timer (sender seq 3)")
    assert "different content" in lines[1]
    board = MESSAGES.short(MESSAGES.name_of(RECORDED))
    assert f"  recorded: {board} to lamp" in lines and f"  replayed: {board} to lamp" in lines
    # Only the field that differs, by its path; the equal ones are not listed.
    assert _rows(lines) == {"body.lights[1].lit": ["false", "true"]}


def test_missing_items_and_keys_are_absent_on_one_side() -> None:
    replayed = Board("hall", (Light("red", True),))
    rows = _rows(_divergence(_step([RECORDED]), "lamp", replayed).describe())
    assert rows == {"body.lights[1]": ['{"colour":"green","lit":false}', "(absent)"]}
    assert differing_fields({"a": 1}, {"a": 1, "b": [2]}) == [FieldDiff("b", ABSENT, [2])]


def test_another_type_and_receiver_show_in_the_headline_and_the_table() -> None:
    light = Light("blue", True)
    lines = _divergence(_step([RECORDED]), "door", light).describe()
    board, lamp = (MESSAGES.short(MESSAGES.name_of(m)) for m in (RECORDED, light))
    assert f"  recorded: {board} to lamp" in lines
    assert f"  replayed: {lamp} to door" in lines
    rows = _rows(lines)
    assert rows["to"] == ['"lamp"', '"door"'] and rows["type"] == [f'"{board}"', f'"{lamp}"']
    assert rows["body.colour"] == ["(absent)", '"blue"']
    assert rows["body.name"] == ['"hall"', "(absent)"]


def test_a_message_not_in_the_recording_lists_what_was_sent() -> None:
    lines = _divergence(_step([]), "lamp", Light("red", False)).describe()
    assert "  recorded: nothing" in lines
    assert _rows(lines)["(value)"][0] == "(absent)"


def test_a_differing_runtime_call_shows_its_arguments_by_field() -> None:
    call: dict[str, object] = {"target": "runtime", "method": "switch",
                               "args": [{"light": "red", "on": True}]}
    step = _step([], (call,))
    with pytest.raises(DivergenceFound) as found:
        step.expect_call("runtime", "switch", ({"light": "red", "on": False},))
    lines = found.value.divergence.describe()
    assert "  recorded: runtime.switch(...)" in lines
    assert _rows(lines) == {"args[0].on": ["true", "false"]}


def test_errors_compare_as_values_and_the_chain_is_kept() -> None:
    div = Divergence(7, "panel", 2, "Tick", "", 3, "the handler raised another error",
                     "KeyError: 'x'", "ValueError('y')",
                     chain=["#7 Tick - -> panel (sender seq 3)", "#2 Start - -> panel"])
    lines = div.describe()
    assert "from - (sender seq 3)" in lines[0]
    assert _rows(lines) == {"(value)": ['"KeyError: \'x\'"', '"ValueError(\'y\')"']}
    assert lines[-3:] == ["  caused by (newest first):", "    #7 Tick - -> panel (sender seq 3)",
                          "    #2 Start - -> panel"]


def test_long_values_are_cut_and_many_fields_capped() -> None:
    recorded = {f"f{i:02}": i + 1 for i in range(Divergence.MAX_ROWS + 5)}
    replayed = {key: -value for key, value in recorded.items()}
    div = Divergence(1, "a", 0, "Tick", "", 0, "differs", recorded, replayed)
    lines = div.describe()
    assert len(_rows(lines)) == Divergence.MAX_ROWS
    assert lines[-1] == "  ... and 5 more differing fields"
    long = Divergence(1, "a", 0, "Tick", "", 0, "differs", {"x": "y" * 500}, {"x": "z"})
    (recorded_cell, _) = _rows(long.describe())["x"]
    assert len(recorded_cell) == Divergence.CELL and recorded_cell.endswith("…")
