"""A fast reader for the common YAML manifest, exact where it is used.

Kubernetes reads YAML 1.1 (go-yaml v2 under sigs.k8s.io/yaml): ``defaultMode: 0644`` is the
octal 420, ``readOnly: yes`` is a boolean. The manifest reader's exact path does the same with
libyaml through PyYAML (runtime.pod.manifest), but building Python nodes makes it about ten
times slower than the JSON reader on a big pod. yaml-rs reads YAML 1.2 some fifteen times
faster; the two versions agree on every document that has none of the things they read
differently, and ``fast_load`` takes only such documents:

- a plain (unquoted) scalar shaped like a YAML 1.1 boolean word (yes, no, on, off) or a number
  in a form other than plain decimal (leading zero, underscores, sexagesimal, exponent without
  a dot, binary, octal, hex, a date, .inf/.nan), as a value, a sequence item, a flow item or a
  key;
- a merge key (``<<``), an anchor, an alias or a tag (``&``, ``*``, ``!``: the alias limit is
  the exact path's), a complex key (``? ``), a directive (``%``), a document marker other than
  one leading ``---``, a carriage return or a line break that only YAML 1.1 has (NEL, the
  Unicode separators).

The scan is generous: a false alarm only sends the document to the exact path. Anything
yaml-rs refuses also goes there, so errors are always the exact path's, worded the same. A
property test (tests/unit/runtime/test_yaml_fast.py) holds the two paths equal.
"""

from __future__ import annotations

import re
from typing import Any

import yaml_rs

__all__ = ["fast_load"]

# Plain decimal ints and floats read the same in both versions (and fill real manifests:
# ports, counts, "0.5").
_SAFE_NUMBER = re.compile(r"[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")
# Whatever YAML 1.1 or yaml-rs may read as a number or a date: the forms of both versions
# and of both readers (signs, bases, underscores, sexagesimal, exponents, dots at either
# end, infinities and NaN), generously. A hex digest or a "host:port" is none of them.
_NUMBER_LIKE = re.compile(
    r"[-+]?(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+"
    r"|[0-9][0-9_]*(?::[0-5]?[0-9])*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
    r"|\.[0-9_]+(?:[eE][-+]?[0-9]+)?|\.(?:inf|Inf|INF|nan|NaN|NAN))"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}")
_BOOLEAN_WORDS_OF_1_1 = frozenset(
    ["yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF"])
# A candidate: a run of the characters numbers and those words are made of, after a
# blank, a line break or a flow bracket or comma, and ending the line, a flow item, or a
# key at its colon (a colon inside is a sexagesimal's, one before a blank a key's). It
# also finds such a run inside a plain scalar of several words ("sleep 0644"): a false
# alarm, which costs only speed. One pattern that starts with a character class and is
# mostly letters it rejects at once: Python's regex engine scans a big manifest with it in
# about a millisecond, where a group of contexts took several.
_CANDIDATE = re.compile(
    r"[ \t\[{,\n](?P<token>[-+.0-9yYnNoO](?:[-+0-9a-fA-F_.xXoOsSnNfFiI]|:(?![ \t]|$))*)"
    r"[ \t]*(?=$|#|[,\]}]|:(?:[ \t]|$))",
    re.MULTILINE,
)
# Anchors, aliases, tags, merge keys, complex keys, directives and document markers (a
# leading "---" is allowed: many manifests start with one). Most manifests have none of
# their characters, which a plain search finds before any pattern runs.
_SYNTAX_CHARACTERS = ("&", "*", "!", "<<", "?", "%", "---", "...")
_SUSPECT_SYNTAX = re.compile(
    r"(?<![^\s\[{,:-])[&*!](?![\s&])|<<|^[ \t]*\?(?:[ \t]|$)|^%|^(?:---|\.\.\.)", re.MULTILINE)
# YAML 1.1 also breaks lines at NEL and the Unicode separators; 1.2 reads them as text.
_LINE_BREAKS_OF_1_1 = ("\r", "\x85", "\u2028", "\u2029")
_LEADING_MARKER = re.compile(r"\A(?:[ \t]*(?:#[^\n]*)?\n)*---[ \t]*(?:#[^\n]*)?\n")


def needs_exact_reader(text: str) -> bool:
    """Whether the text may hold something YAML 1.1 and 1.2 read differently."""
    if any(c in text for c in _LINE_BREAKS_OF_1_1):
        return True
    body = _LEADING_MARKER.sub("", text, count=1)
    if any(c in body for c in _SYNTAX_CHARACTERS) and _SUSPECT_SYNTAX.search(body):
        return True
    for match in _CANDIDATE.finditer("\n" + body):
        token = match["token"]
        if token in _BOOLEAN_WORDS_OF_1_1 or (
                _NUMBER_LIKE.fullmatch(token) and not _SAFE_NUMBER.fullmatch(token)):
            return True
    return False


def fast_load(text: str) -> dict[str, Any] | None:
    """The one mapping the text holds, or None: the caller then takes the exact path.

    None when the text may be read differently by YAML 1.1 (see the module's rules), when
    yaml-rs refuses it (a syntax error, a repeated key: the exact path words the error), or
    when it is not a single mapping (empty, a list, a scalar, several documents).
    """
    if needs_exact_reader(text):
        return None
    try:
        document = yaml_rs.loads(
            text, parse_datetime=False, duplicate_key_policy=yaml_rs.DuplicateKeyPolicy.Error)
    except (yaml_rs.YAMLDecodeError, ValueError, RecursionError):
        return None
    return document if isinstance(document, dict) else None
