"""JSON text read as Go's encoding/json reads it, for the one place upstream's pod validation
decodes JSON itself (the deprecated tolerations annotation): its syntax errors worded as
Go's scanner words them, checked before any decoding as json.Unmarshal's checkValid does,
and the literal text of every number kept, since Go's type errors quote it.
"""

from __future__ import annotations

import json
from typing import Any

from runtime.pod.validation.fields import go_quote

WHITESPACE = b" \t\r\n"
EOF = "unexpected end of JSON input"


class GoJSONError(ValueError):
    """What Go's json.Unmarshal would return, worded as its Error() reads."""


class Number(str):
    """A JSON number's literal text (``1.5``, ``1e2``), as Go's type errors show it."""


def loads(data: bytes) -> Any:
    """The value of ``data``, numbers as Number; GoJSONError as Go's scanner words it."""
    _Scanner(data).check()
    return json.loads(data, parse_int=Number, parse_float=Number)


def _quote_char(c: int) -> str:
    """Go's quoteChar: the offending byte, read as a rune, as strconv.Quote shows it."""
    if c == ord("'"):
        return "'\\''"
    if c == ord('"'):
        return "'\"'"
    return "'" + go_quote(chr(c))[1:-1] + "'"


class _Scanner:
    """A recursive reading of Go's scanner state machine (encoding/json/scanner.go), for its
    error messages only."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def check(self) -> None:
        self._value("looking for beginning of value")
        self._space()
        if self.at < len(self.data):
            self._fail("after top-level value")

    def _peek(self) -> int:
        if self.at >= len(self.data):
            raise GoJSONError(EOF)
        return self.data[self.at]

    def _fail(self, context: str) -> None:
        raise GoJSONError(f"invalid character {_quote_char(self._peek())} {context}")

    def _space(self) -> None:
        while self.at < len(self.data) and self.data[self.at] in WHITESPACE:
            self.at += 1

    def _value(self, context: str) -> None:
        self._space()
        c = self._peek()
        if c == ord("{"):
            self._object()
        elif c == ord("["):
            self._array()
        elif c == ord('"'):
            self._string()
        elif c == ord("-") or ord("0") <= c <= ord("9"):
            self._number()
        elif c in b"tfn":
            self._literal({ord("t"): b"true", ord("f"): b"false", ord("n"): b"null"}[c])
        else:
            self._fail(context)

    def _object(self) -> None:
        self.at += 1
        self._space()
        if self._peek() == ord("}"):
            self.at += 1
            return
        while True:
            if self._peek() != ord('"'):
                self._fail("looking for beginning of object key string")
            self._string()
            self._space()
            if self._peek() != ord(":"):
                self._fail("after object key")
            self.at += 1
            self._value("looking for beginning of value")
            self._space()
            c = self._peek()
            if c == ord("}"):
                self.at += 1
                return
            if c != ord(","):
                self._fail("after object key:value pair")
            self.at += 1
            self._space()

    def _array(self) -> None:
        self.at += 1
        self._space()
        if self._peek() == ord("]"):
            self.at += 1
            return
        while True:
            self._value("looking for beginning of value")
            self._space()
            c = self._peek()
            if c == ord("]"):
                self.at += 1
                return
            if c != ord(","):
                self._fail("after array element")
            self.at += 1

    def _string(self) -> None:
        self.at += 1
        while True:
            c = self._peek()
            self.at += 1
            if c == ord('"'):
                return
            if c < 0x20:
                self.at -= 1
                self._fail("in string literal")
            if c == ord("\\"):
                e = self._peek()
                if e == ord("u"):
                    self.at += 1
                    for _ in range(4):
                        if self._peek() not in b"0123456789abcdefABCDEF":
                            self._fail("in \\u hexadecimal character escape")
                        self.at += 1
                elif e in b'"\\/bfnrt':
                    self.at += 1
                else:
                    self._fail("in string escape code")

    def _digits(self) -> None:
        while self.at < len(self.data) and self.data[self.at] in b"0123456789":
            self.at += 1

    def _number(self) -> None:
        if self._peek() == ord("-"):
            self.at += 1
            if not ord("0") <= self._peek() <= ord("9"):
                self._fail("in numeric literal")
        if self._peek() == ord("0"):
            self.at += 1
        else:
            self._digits()
        if self.at < len(self.data) and self.data[self.at] == ord("."):
            self.at += 1
            if not ord("0") <= self._peek() <= ord("9"):
                self._fail("after decimal point in numeric literal")
            self._digits()
        if self.at < len(self.data) and self.data[self.at] in b"eE":
            self.at += 1
            if self._peek() in b"+-":
                self.at += 1
            if not ord("0") <= self._peek() <= ord("9"):
                self._fail("in exponent of numeric literal")
            self._digits()

    def _literal(self, word: bytes) -> None:
        self.at += 1
        for expected in word[1:]:
            if self._peek() != expected:
                self._fail(f"in literal {word.decode()} (expecting {_quote_char(expected)})")
            self.at += 1
