"""Arguments JSON built incrementally from untyped XML-style parameters.

Formats such as qwen3_coder, minimax_m2, DSML and glm47 send each parameter as a
name and raw text. `ArgumentsBuilder` turns that into `ToolCallDelta` fragments of
one JSON object, typed by the tool's schema (parsing/coercion.py): a parameter
that is (or may only be) a string streams as it arrives; any other type is held
until the parameter ends, then coerced. The fragments join to exactly
`{"city": "Tokyo", "days": 3}`.
"""

from __future__ import annotations

import json
import re

from ...conversation import ToolSpec
from ..coercion import coerce_value, dumps, fits, parameter_types, wants_string
from .base import ToolParser

_NOT_JSON = object()


def _reject_constant(name: str) -> None:
    raise ValueError(name)  # NaN and Infinity are not JSON


def _json_value(text: str) -> object:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return _NOT_JSON


# What json.dumps(ensure_ascii=False) escapes inside a string, and how: the same
# output, one C-level `str.translate` instead of a json.dumps call per fragment.
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]').search
JSON_STRING_ESCAPES = {c: json.dumps(chr(c))[1:-1] for c in range(0x20)} | {ord('"'): '\\"', ord("\\"): "\\\\"}


class ArgumentsBuilder:
    """`strip_newline`: drop one newline right after the opening tag and one right
    before the closing tag (qwen3_coder writes `<parameter=x>\\nvalue\\n</parameter>`).
    `paired_newlines`: drop the closing one only where an opening one was dropped
    (Seed-OSS writes values inline, so a value's own trailing newline is its text).
    `decode_untyped`: a value no schema types (an undeclared tool or parameter) is held
    and read as JSON where it is JSON (`42`, `true`, `{"a": 1}`), else the text."""

    def __init__(
        self,
        owner: ToolParser,
        tool: ToolSpec | None,
        strip_newline: bool = False,
        paired_newlines: bool = False,
        decode_untyped: bool = False,
    ):
        self._owner = owner
        self._tool = tool
        self._decode_untyped = decode_untyped
        self._strip_newline = strip_newline
        self._paired = paired_newlines
        self._strip_tail = strip_newline  # for this parameter
        self._count = 0
        self._types: tuple[str, ...] = ()
        self._streaming = False
        self._held: list[str] = []
        self._fresh = False  # no value text seen yet for this parameter
        self._tail = ""  # a trailing newline held back while streaming
        # Inside a streamed string value with nothing held back or left to strip:
        # a chunk that needs no escaping is its own arguments fragment (a parser's
        # hot path may then stream it without calling `text`).
        self.plain_run = False

    def begin(self, name: str, string_hint: bool | None = None) -> None:
        """Start parameter `name`. `string_hint` is what the format itself says
        (DSML's `string="true"`); None defers to the schema."""
        self._owner._stream_args(("{" if self._count == 0 else ", ") + dumps(name) + ": ")
        self._count += 1
        # A string hint against a schema that allows no string (DSML `string="true">42`
        # for an integer): the schema wins, as the value must fit the tool.
        self._types = parameter_types(self._tool, name)
        if string_hint and (not self._types or "string" in self._types):
            self._types = ("string",)
        untyped = not self._types and (string_hint is False or self._decode_untyped)
        if untyped:
            self._types = ("null", "boolean", "integer", "number", "object", "array", "string")
        # A value the format marks as not-a-string is JSON: held and decoded even
        # where the schema says string (DSML `string="false">"Tokyo"`).
        self._json_first = string_hint is False or untyped
        self._streaming = wants_string(self._types) and not self._json_first
        self._held = []
        self._fresh = True
        self._tail = ""
        self._strip_tail = self._strip_newline
        self.plain_run = False
        if self._streaming:
            self._owner._stream_args('"')

    def text(self, chunk: str) -> None:
        if not chunk:
            return
        if self._fresh:
            if self._strip_newline and chunk.startswith("\n"):
                chunk = chunk[1:]
            elif self._paired:
                self._strip_tail = False
            self._fresh = False
            if not chunk:
                return
        if not self._streaming:
            self._held.append(chunk)
            return
        chunk = self._tail + chunk
        self._tail = ""
        if self._strip_tail and chunk.endswith("\n"):
            chunk, self._tail = chunk[:-1], "\n"
        if chunk:
            # Most chunks need no escaping; json.dumps is the slow path for those that do.
            self._owner._stream_args(chunk.translate(JSON_STRING_ESCAPES) if _NEEDS_ESCAPE(chunk) else chunk)
        self.plain_run = not self._tail and not self._strip_newline

    def end(self) -> None:
        """The parameter's closing tag was read."""
        self.plain_run = False
        if self._streaming:
            self._owner._stream_args('"')
            return
        value = "".join(self._held)
        if self._strip_tail and value.endswith("\n"):
            value = value[:-1]
        decoded = _json_value(value) if self._json_first else _NOT_JSON
        if decoded is _NOT_JSON or not fits(decoded, self._types):
            # Not JSON, or JSON the schema does not allow (DSML `string="false">null`
            # for a string parameter): the schema decides, as for untyped values...
            coerced = coerce_value(value, self._types)
            # ...unless nothing fits and the schema allows no string either: then the
            # JSON the model marked as such (an object for an integer) beats its text.
            if decoded is _NOT_JSON or not isinstance(coerced, str) or "string" in self._types:
                decoded = coerced
        self._owner._stream_args(dumps(decoded))

    def close(self) -> None:
        """The call's closing tag was read."""
        self._owner._stream_args("}" if self._count else "{}")

    @property
    def in_string(self) -> bool:
        return self._streaming
