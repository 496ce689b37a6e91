"""The fast YAML path reads every manifest it takes exactly as the exact (YAML 1.1) path.

runtime.pod.yaml_fast hands a manifest to yaml-rs (YAML 1.2) only when a scan finds nothing
the two versions read differently. These tests hold that promise against the exact path
(libyaml through PyYAML, as the manifest reader configures it): every tricky scalar in every
place a scalar can stand, thousands of random documents, and the manifest corpus; and they
check the fast path is really taken for ordinary manifests, or it would buy nothing.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml_rs

from bench.pod_parse_bench import manifest
from runtime.pod.yaml_exact import load_all
from runtime.pod.yaml_fast import fast_load

CORPUS = Path(__file__).resolve().parents[2] / "data" / "manifests"

TOKENS = (
    # YAML 1.1 booleans and their 1.2 neighbours
    "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF", "y", "n",
    "true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL", "~",
    # numbers in every form either version knows
    "0", "-0", "+12", "12", "3.0", "0.5", "-1.25", "0644", "01777", "08", "0777.", "0x1F",
    "0o17", "0b101", "1_000", "12:30", "1:20:30.5", "1e3", "1E3", "1.5e3", "1.5e+3", "1.",
    ".5", ".inf", "-.inf", "+.INF", ".nan", ".NaN",
    # dates and times (strings on both paths), addresses, quantities, digests, words
    "2024-01-01", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5",
    "10.0.0.1", "10.0.2.15:3260", "1.2.3", "100m", "128Mi", "1Gi", "1e", "deadbeef",
    "279e8e4fe314f6cb7bc55fa3fbc21bbeaa48c0ea", "abc", "a b", "a: b", "- a", "#x",
)

PLACES = (
    "k: {t}\n", "k: {t} # note\n", "- {t}\n", "k:\n- {t}\n", "k: [{t}]\n", "k: [a, {t}, b]\n",
    "k: {{x: {t}}}\n", "k: {{{t}: x}}\n", "{t}: v\n", "- {t}: v\n", "k:\n  {t}\n",
    "k: '{t}'\n", 'k: "{t}"\n', "k: |\n  {t}\n", "k: >\n  {t}\n", "k: x {t}\n",
    "k: {t} x\n", "---\nk: {t}\n", "a:\n  b:\n  - c: {t}\n    d: [{t}]\n",
)


def _exact(text: str) -> object:
    documents = [d for d in load_all(text) if d is not None]
    return documents[0] if len(documents) == 1 else documents


def _agrees(text: str) -> bool:
    """The fast path declined, or read the text as the exact path does (the exact path may
    also refuse it: then the fast path must have declined)."""
    fast = fast_load(text)
    if fast is None:
        return True
    try:
        return _exact(text) == fast
    except Exception:
        return False


@pytest.mark.parametrize("place", PLACES)
def test_every_tricky_scalar_in_every_place(place: str) -> None:
    wrong = [t for t in TOKENS if not _agrees(place.format(t=t))]
    assert wrong == []


def test_the_scan_catches_what_the_versions_read_differently() -> None:
    """Where yaml-rs alone would differ, the fast path must decline: this is the case the
    scan exists for, so some must exist (or the test proves nothing)."""
    differing = 0
    for place in PLACES:
        for token in TOKENS:
            text = place.format(t=token)
            try:
                raw = yaml_rs.loads(text, parse_datetime=False)
                exact = _exact(text)
            except Exception:
                continue
            if raw != exact:
                differing += 1
                assert fast_load(text) is None, text
    assert differing > 50


def _random_scalar(rng: random.Random) -> str:
    token = rng.choice((*TOKENS, "name", "app-1", "/bin/sh", "-c", "x y z", "ls *", "a && b"))
    style = rng.random()
    if style < 0.15:
        return "'" + token.replace("'", "''") + "'"
    if style < 0.3:
        return '"' + token.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return token


def _random_block(rng: random.Random, indent: int, depth: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for i in range(rng.randint(1, 4)):
        key = rng.choice(("name", "value", f"k{i}", "on", "0644", "ports", "x"))
        if key in {line.split(":")[0].strip() for line in lines if line.startswith(pad + key)}:
            continue
        shape = rng.random()
        if depth > 0 and shape < 0.25:
            lines.append(f"{pad}{key}:")
            lines += _random_block(rng, indent + 2, depth - 1)
        elif depth > 0 and shape < 0.45:
            lines.append(f"{pad}{key}:")
            for _ in range(rng.randint(1, 3)):
                lines.append(f"{pad}- {_random_scalar(rng)}")
        elif shape < 0.6:
            items = ", ".join(_random_scalar(rng) for _ in range(rng.randint(0, 3)))
            lines.append(f"{pad}{key}: [{items}]")
        else:
            lines.append(f"{pad}{key}: {_random_scalar(rng)}")
    return lines


def test_random_documents_read_alike() -> None:
    rng = random.Random(20261123)
    taken = 0
    for _ in range(3000):
        text = "\n".join(_random_block(rng, 0, 3)) + "\n"
        assert _agrees(text), text
        taken += fast_load(text) is not None
    assert taken > 300, "the fast path is hardly ever taken: the scan is too wary"


def test_the_corpus_reads_alike_and_mostly_fast() -> None:
    paths = sorted(CORPUS.glob("*/*.yaml"))
    fast = 0
    for path in paths:
        text = path.read_text()
        assert _agrees(text), path.name
        fast += fast_load(text) is not None
    assert fast >= 0.9 * len(paths)


def test_a_big_ordinary_pod_takes_the_fast_path() -> None:
    text = manifest(100).decode()
    fast = fast_load(text)
    assert fast is not None
    assert fast == _exact(text)


@pytest.mark.parametrize("text", [
    "a: 1\na: 2\n",                   # a repeated key: the exact path names it
    "a: [1\n",                        # broken
    "a: &x [1]\nb: *x\n",             # aliases: the exact path counts them
    "<<: {a: 1}\nb: 2\n",             # a merge key
    "a: 1\n---\nb: 2\n",              # several documents
    "- a\n- b\n",                     # not a mapping
    "",
    "a: 1\r\nb: 2\r\n",
    "a: !!str 1\n",
])
def test_what_it_leaves_to_the_exact_path(text: str) -> None:
    assert fast_load(text) is None
