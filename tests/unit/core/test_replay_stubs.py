"""Replay's comparison of what a handler does with what the recording says it did."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import pytest
from msgspec import UNSET, UnsetType

from actors.core.trace.names import MESSAGES
from actors.core.trace.stubs import DivergenceFound, Step, known_keys_only


@dataclass(frozen=True, slots=True)
class Outcome:
    """A message whose newer code has a field (``delay``) older recorders did not."""

    what: str
    delay: float | UnsetType = UNSET


@dataclass(frozen=True, slots=True)
class Report:
    outcomes: tuple[Outcome, ...]


def _step(sent_body: dict[str, Any], known_keys: bool) -> Step:
    delivery = {"id": 1, "to": "a", "inc": 0, "type": "Tick", "from": "", "seq": 1}
    sent = {"to": "b", "type": MESSAGES.name_of(Report(())), "body": sent_body}
    return Step(delivery, [sent], [], [], known_keys=known_keys)


def _recorded_before_the_field() -> dict[str, Any]:
    """What an older recorder wrote for the same Report: no ``delay`` key anywhere."""
    return {"outcomes": [{"what": "started"}, {"what": "waiting"}]}


REPLAYED = Report((Outcome("started"), Outcome("waiting", delay=40.0)))


def test_a_version_1_body_lacking_a_new_key_compares_equal() -> None:
    step = _step(_recorded_before_the_field(), known_keys=True)
    step.expect_send("b", REPLAYED)
    step.finish()


def test_a_version_2_body_lacking_the_key_diverges() -> None:
    step = _step(_recorded_before_the_field(), known_keys=False)
    with pytest.raises(DivergenceFound) as found:
        step.expect_send("b", REPLAYED)
    assert "different content" in found.value.divergence.step
    assert found.value.divergence.actual["body"]["outcomes"][1]["delay"] == 40.0


def test_version_1_still_compares_values_and_the_keys_it_has() -> None:
    changed = _recorded_before_the_field()
    changed["outcomes"][1]["what"] = "running"
    with pytest.raises(DivergenceFound):
        _step(changed, known_keys=True).expect_send("b", REPLAYED)
    extra = _recorded_before_the_field()
    extra["outcomes"][0]["note"] = "a key the replay does not produce"
    with pytest.raises(DivergenceFound):
        _step(extra, known_keys=True).expect_send("b", REPLAYED)
    fewer = {"outcomes": [{"what": "started"}]}
    with pytest.raises(DivergenceFound):
        _step(fewer, known_keys=True).expect_send("b", REPLAYED)


def test_known_keys_only_recurses_into_dicts_and_lists() -> None:
    actual = msgspec.json.decode(msgspec.json.encode(
        {"a": 1, "new": 2, "nested": {"b": [{"c": 3, "new": 4}, {"c": 5}], "new": 6}}))
    recorded = {"a": 1, "nested": {"b": [{"c": 3}, {"c": 5}]}}
    assert known_keys_only(actual, recorded) == recorded
    assert known_keys_only([1, 2, 3], [1]) == [1, 2, 3]  # extra items are no new keys
    assert known_keys_only("x", {"a": 1}) == "x"


def test_version_1_call_arguments_ignore_new_keys_too() -> None:
    delivery = {"id": 1, "to": "a", "inc": 0, "type": "Tick", "from": "", "seq": 1}
    call = {"target": "runtime", "method": "create", "args": [{"name": "x"}], "result": "id"}
    lenient = Step(delivery, [], [dict(call)], [], known_keys=True)
    assert lenient.expect_call("runtime", "create", ({"name": "x", "new": 1},))["result"] == "id"
    strict = Step(delivery, [], [dict(call)], [], known_keys=False)
    with pytest.raises(DivergenceFound):
        strict.expect_call("runtime", "create", ({"name": "x", "new": 1},))
