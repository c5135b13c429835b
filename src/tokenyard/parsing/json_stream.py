"""Incremental JSON checking for streamed tool-call arguments.

`JsonValueScanner` is fed the text of one JSON value in arbitrary chunks. It returns
the part it has validated so far, so every fragment a parser streams as a
`ToolCallDelta` keeps the joined arguments a prefix of valid JSON, and it tells the
exact index where the value ends. Literal control characters inside strings (models
write raw newlines into code arguments) are escaped on the way through, so the
arguments are strict JSON; nothing else is rewritten.
"""

from __future__ import annotations

import re

from .patterns import always_match

_STRING_RUN = always_match(r'[^"\\\x00-\x1f]*')
# Whether a whole chunk is plain string text. The hot paths test printable text
# without a quote or a backslash first (three C calls, cheaper than the regex).
_PLAIN_STRING = re.compile(r'[^"\\\x00-\x1f]*').fullmatch
# String text with complete escapes, and maybe a backslash whose escape comes next.
_STRING_BODY = re.compile(r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*(\\)?').fullmatch
_WHITESPACE_RUN = always_match(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?").fullmatch
_LITERALS = ("true", "false", "null")
_LITERAL_PREFIXES = frozenset(lit[:i] for lit in _LITERALS for i in range(1, len(lit) + 1))
_NUMBER_CHARS = frozenset("0123456789+-.eE")
_HEX = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES = frozenset('"\\/bfnrt')
_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}

# States.
_VALUE, _VALUE_OR_CLOSE, _KEY_OR_CLOSE, _KEY, _COLON, _AFTER, _STRING, _ESCAPE, _UNICODE, _SCALAR, _DONE = range(11)


class JsonStreamError(ValueError):
    """`pos` counts from the first character ever fed; `offset` from the start of
    the chunk whose `feed` raised."""

    def __init__(self, message: str, pos: int, offset: int):
        super().__init__(f"{message} at offset {pos}")
        self.pos = pos
        self.offset = offset
        self.valid = ""  # the validated output of the failing chunk, up to `offset`


class JsonValueScanner:
    __slots__ = ("_stack", "_state", "_key", "_scalar", "_hex_left", "_consumed", "done")

    def __init__(self) -> None:
        self._stack: list[str] = []
        self._state = _VALUE
        self._key = False
        self._scalar = ""
        self._hex_left = 0
        self._consumed = 0
        self.done = False

    @property
    def depth(self) -> int:
        return len(self._stack)

    @property
    def in_string(self) -> bool:
        """Inside a string literal: any text here, markers included, is the string's."""
        return self._state in (_STRING, _ESCAPE, _UNICODE)

    def take_plain(self, text: str) -> bool:
        """Inside a string, `text` has nothing that could end it or needs escaping
        (escape sequences pass through as written): consume it (its output is `text`
        itself) and say so; otherwise consume nothing. The hot path of parsers that
        stream a string argument token by token."""
        state = self._state
        if state == _STRING:
            if ('"' not in text and "\\" not in text and text.isprintable()) or _PLAIN_STRING(text) is not None:
                self._consumed += len(text)
                return True
            match = _STRING_BODY(text)
        elif state == _ESCAPE and text[:1] in _SIMPLE_ESCAPES:
            match = _STRING_BODY(text, 1)
        else:
            return False
        if match is None:
            return False
        # Escapes pass through as written; a trailing backslash awaits its escape.
        self._state = _STRING if match.group(1) is None else _ESCAPE
        self._consumed += len(text)
        return True

    def feed(self, text: str) -> tuple[str, int]:
        """Validate `text`. Returns (validated output, end) where `end` is the index in
        `text` just past the value if it completed here, else -1. Raises
        `JsonStreamError` at the first character that can not continue valid JSON;
        its `pos` counts from the first character ever fed."""
        state = self._state
        if state == _STRING:
            # The common streaming case: a token of plain string text, emitted as is.
            if ('"' not in text and "\\" not in text and text.isprintable()) or _PLAIN_STRING(text) is not None:
                self._consumed += len(text)
                return text, -1
        elif state == _DONE:
            return "", 0
        out: list[str] = []
        try:
            i = self._scan(text, out, 0)
        except JsonStreamError as error:
            error.valid = "".join(out)
            raise
        self._consumed += i
        if self._state == _DONE:
            self.done = True
            return "".join(out), i
        return "".join(out), -1

    def _scan(self, text: str, out: list[str], emit_from: int) -> int:
        """The scanning loop of `feed`: appends validated output to `out` (up to the
        offending character when it raises) and returns the characters consumed."""
        i = 0
        n = len(text)
        try:
            while i < n:
                st = self._state
                if st == _STRING:
                    j = _STRING_RUN(text, i).end()
                    if j == n:
                        i = n
                        break
                    c = text[j]
                    if c == '"':
                        i = j + 1
                        self._state = _COLON if self._key else self._after_value()
                    elif c == "\\":
                        i = j + 1
                        self._state = _ESCAPE
                    else:  # a raw control character: escape it
                        out.append(text[emit_from:j])
                        out.append(_CONTROL_ESCAPES.get(c) or f"\\u{ord(c):04x}")
                        i = emit_from = j + 1
                    if self._state == _DONE:
                        break
                    continue
                c = text[i]
                if st == _ESCAPE:
                    if c in _SIMPLE_ESCAPES:
                        self._state = _STRING
                    elif c == "u":
                        self._state = _UNICODE
                        self._hex_left = 4
                    else:
                        self._fail("invalid escape", i)
                    i += 1
                    continue
                if st == _UNICODE:
                    if c not in _HEX:
                        self._fail("invalid \\u escape", i)
                    self._hex_left -= 1
                    if not self._hex_left:
                        self._state = _STRING
                    i += 1
                    continue
                if st == _SCALAR:
                    if c in _NUMBER_CHARS or c.isalpha():
                        self._scalar += c
                        if self._scalar[0].isalpha() and self._scalar not in _LITERAL_PREFIXES:
                            self._fail("invalid literal", i)
                        i += 1
                        emit_from = i
                        continue
                    out.append(self._close_scalar(i))
                    self._state = self._after_value()
                    if self._state == _DONE:
                        break
                    continue
                if c in " \t\n\r":
                    i = _WHITESPACE_RUN(text, i).end()
                    continue
                if st == _VALUE or st == _VALUE_OR_CLOSE:
                    if c == "{":
                        self._stack.append("}")
                        self._state = _KEY_OR_CLOSE
                    elif c == "[":
                        self._stack.append("]")
                        self._state = _VALUE_OR_CLOSE
                    elif c == '"':
                        self._key = False
                        self._state = _STRING
                    elif c == "-" or c.isdigit() or c in "tfn":
                        out.append(text[emit_from:i])
                        self._scalar = c
                        self._state = _SCALAR
                        emit_from = i + 1
                    elif c == "]" and st == _VALUE_OR_CLOSE:
                        self._stack.pop()
                        self._state = self._after_value()
                    else:
                        self._fail("expected a value", i)
                elif st == _KEY_OR_CLOSE or st == _KEY:
                    if c == '"':
                        self._key = True
                        self._state = _STRING
                    elif c == "}" and st == _KEY_OR_CLOSE:
                        self._stack.pop()
                        self._state = self._after_value()
                    else:
                        self._fail("expected a key", i)
                elif st == _COLON:
                    if c != ":":
                        self._fail("expected ':'", i)
                    self._state = _VALUE
                elif st == _AFTER:
                    if c == ",":
                        self._state = _KEY if self._stack[-1] == "}" else _VALUE
                    elif c == self._stack[-1]:
                        self._stack.pop()
                        self._state = self._after_value()
                    else:
                        self._fail("expected ',' or a closing bracket", i)
                i += 1
                if self._state == _DONE:
                    break

        except JsonStreamError as error:
            out.append(text[emit_from : error.offset])
            raise
        out.append(text[emit_from:i])
        return i

    def finish(self) -> str:
        """End of input: a pending top-level scalar completes; anything else open is
        an error (`JsonStreamError`)."""
        if self._state == _SCALAR and not self._stack:
            out = self._close_scalar(0)
            self._state = _DONE
            self.done = True
            return out
        if self._state != _DONE:
            raise JsonStreamError("unterminated JSON value", self._consumed, 0)
        return ""

    def _after_value(self) -> int:
        return _AFTER if self._stack else _DONE

    def _close_scalar(self, i: int) -> str:
        scalar, self._scalar = self._scalar, ""
        if scalar in _LITERALS or _NUMBER(scalar):
            return scalar
        self._fail("invalid number or literal", i)
        return ""  # unreachable

    def _fail(self, message: str, i: int) -> None:
        raise JsonStreamError(message, self._consumed + i, i)
