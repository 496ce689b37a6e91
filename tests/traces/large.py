"""A large trace made from a small recorded one: its records repeated, one run after another.

The timeline page must stay responsive with a hundred thousand messages; no recorded trace
is that long. ``write_large_trace`` repeats a real recording (tests/traces/...) until it has
the messages asked for: each copy follows the one before in time, with its delivery ids
shifted (causes still point inside their copy) and its pods renamed to one of ``pod_groups``
sets (a copy's pods get the UIDs and names of their set), so the result looks like a kubelet
running the same few pods' lives over and over for an hour.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from actors.core.trace.reader import read_trace

SOURCE = Path(__file__).resolve().parent / "drill-kill-probes-dead-letter"
_ID_FIELDS = {"msg": ("id", "parent"), "begin": ("id",), "end": ("id",), "call": ("in",),
              "input": ("in",)}


def pods_in(records: list[dict[str, Any]]) -> dict[str, str]:
    """The pods of a recording: UID -> name (from the pod workers' addresses and bodies)."""
    import actors.app.tools.kubelet_plugin  # noqa: F401 - the kubelet's pods hook
    from actors.app.tools.plugins import TOOLS

    found: dict[str, str] = {}
    for record in records:
        if record.get("k") == "msg":
            for ref in TOOLS.pods_in(str(record.get("type", "")), record.get("body")):
                if ref.name:
                    found[ref.uid] = ref.name
    return found


def write_large_trace(target: Path, messages: int, source: Path = SOURCE,
                      pod_groups: int = 20) -> int:
    """Write a trace of at least ``messages`` messages into ``target`` (a directory);
    returns how many it holds."""
    trace = read_trace(source)
    records = trace.records
    per_copy = sum(1 for r in records if r.get("k") == "msg")
    copies = -(-messages // per_copy)
    first, last = records[0]["m"], max(r["m"] for r in records)
    period = last - first + 0.05
    id_step = 1 + max(int(r[f]) for r in records for f in _ID_FIELDS.get(r["k"], ())
                      if isinstance(r.get(f), int))
    pods = pods_in(records)
    encode = msgspec.json.encode
    texts = [encode(r).decode() for r in records]
    target.mkdir(parents=True, exist_ok=True)
    with (target / "trace-000001.jsonl").open("w", encoding="utf-8") as out:
        out.write(encode(trace.header).decode() + "\n")
        for copy in range(copies):
            group = copy % pod_groups
            lines = []
            for text, record in zip(texts, records, strict=True):
                if group:
                    for uid, name in pods.items():
                        text = text.replace(uid, f"{group:04x}{uid[4:]}").replace(
                            name, f"{name}-{group}")
                    record = msgspec.json.decode(text)
                else:
                    record = dict(record)
                record["m"] = record["m"] + copy * period
                record["t"] = record.get("t", 0.0) + copy * period
                for f in _ID_FIELDS.get(record["k"], ()):
                    if isinstance(record.get(f), int):
                        record[f] += copy * id_step
                lines.append(encode(record).decode())
            out.write("\n".join(lines) + "\n")
    return copies * per_copy
