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
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

from ...conversation import ToolSpec
from ...events import ParseEvent, ToolCallDelta
from ..coercion import (
    ambiguous_shape,
    coerce_value,
    dumps,
    fits,
    has_shapes,
    parameter_enum,
    parameter_types,
    wants_string,
)
from ..markers import MarkerSet
from .base import OpenCall, ToolParser

_NOT_JSON = object()


def _reject_constant(name: str) -> None:
    raise ValueError(name)  # NaN and Infinity are not JSON


def _json_value(text: str) -> object:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return _NOT_JSON


# What json.dumps(ensure_ascii=False) escapes inside a string.
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]').search


def take_value_text(
    owner: ToolParser,
    call: OpenCall,
    arguments: ArgumentsBuilder,
    text: str,
    plain: Callable[[str], object],
    stops: MarkerSet,
) -> list[ParseEvent] | None:
    """The hot path of a long parameter value (a file's content) in the XML-style
    engines: `text` fed with nothing held, in which nothing can begin a tag that ends
    the value (none of `stops`), is the value's text, no state machine. `plain`
    finds a character that may begin such a tag (the first character of one of
    `stops`) or needs escaping in JSON: with none, inside a streamed string, the text
    is its own arguments fragment. None: not such text, nothing consumed (the
    caller's state machine reads it)."""
    lead = stops.lead
    # Printable text without the stops' one first character, a quote or a backslash
    # has none of `plain`'s characters: three `in` tests and `isprintable` are
    # cheaper than the regex, which decides the rest.
    if arguments.plain_run and (
        (lead not in text and '"' not in text and "\\" not in text and text.isprintable()) or plain(text) is None
    ):
        call.raw.append(text)
        call.arguments.append(text)
        return [ToolCallDelta(call.index, text)]
    if lead in text and stops.trigger(text) is not None:
        return None
    call.raw.append(text)
    if arguments.plain_run:  # a quote, backslash or line break: escaped
        fragment = encode_basestring(text)[1:-1]  # json.dumps's own string escaping, in C
        call.arguments.append(fragment)
        return [ToolCallDelta(call.index, fragment)]
    arguments.text(text)
    events, owner._events = owner._events, []
    return events


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
        self._name = ""
        self._hint: bool | None = None
        # The values read so far: they decide which shape of a root `oneOf` applies.
        self._values: dict[str, Any] = {}
        # Parameters held to the call's end because their type depends on a
        # discriminator not read yet (name, text, hint), or None.
        self._pending: list[tuple[str, str, bool | None]] | None = None
        # A streamed string is kept only where a value may decide a shape.
        self._shaped = has_shapes(tool)
        self._streamed: list[str] = []
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
        self._name, self._hint = name, string_hint
        self._held = []
        self._fresh = True
        self._tail = ""
        self._strip_tail = self._strip_newline
        self.plain_run = False
        self._streamed = []
        if self._shaped and self._pending is None and ambiguous_shape(self._tool, name, self._values):
            # Its type depends on a discriminator still to come: from here on the
            # call's arguments are held and written at its end.
            self._pending = []
        if self._pending is not None:
            self._streaming = False
            return
        self._owner._stream_args(("{" if self._count == 0 else ", ") + dumps(name) + ": ")
        self._count += 1
        self._types, self._json_first = self._typing(name, string_hint, self._values)
        self._streaming = wants_string(self._types) and not self._json_first
        if self._streaming:
            self._owner._stream_args('"')

    def _typing(self, name: str, string_hint: bool | None, siblings: dict[str, Any]) -> tuple[tuple[str, ...], bool]:
        """The types a value may take, and whether it is read as JSON first."""
        # A string hint against a schema that allows no string (DSML `string="true">42`
        # for an integer): the schema wins, as the value must fit the tool.
        types = parameter_types(self._tool, name, siblings)
        if string_hint and (not types or "string" in types):
            types = ("string",)
        untyped = not types and (string_hint is False or self._decode_untyped)
        if untyped:
            types = ("null", "boolean", "integer", "number", "object", "array", "string")
        # A value the format marks as not-a-string is JSON: held and decoded even
        # where the schema says string (DSML `string="false">"Tokyo"`).
        return types, string_hint is False or untyped

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
            if self._shaped:
                self._streamed.append(chunk)
            # Most chunks need no escaping; json.dumps is the slow path for those that do.
            self._owner._stream_args(encode_basestring(chunk)[1:-1] if _NEEDS_ESCAPE(chunk) else chunk)
        # (A value that may decide a shape keeps its text: `text` must see every chunk.)
        self.plain_run = not self._tail and not self._strip_newline and not self._shaped

    def end(self) -> None:
        """The parameter's closing tag was read."""
        self.plain_run = False
        if self._streaming:
            self._owner._stream_args('"')
            if self._shaped:
                self._values[self._name] = "".join(self._streamed)
            return
        value = "".join(self._held)
        if self._strip_tail and value.endswith("\n"):
            value = value[:-1]
        if self._pending is not None:
            self._pending.append((self._name, value, self._hint))
            return
        decoded = self._decode(
            value, self._types, self._json_first, parameter_enum(self._tool, self._name, self._values)
        )
        if self._shaped:
            self._values[self._name] = decoded
        self._owner._stream_args(dumps(decoded))

    def _decode(self, value: str, types: tuple[str, ...], json_first: bool, enum: list[Any] | None) -> Any:
        decoded = _json_value(value) if json_first else _NOT_JSON
        if decoded is _NOT_JSON or not fits(decoded, types):
            # Not JSON, or JSON the schema does not allow (DSML `string="false">null`
            # for a string parameter): the schema decides, as for untyped values...
            coerced = coerce_value(value, types, enum)
            # ...unless nothing fits and the schema allows no string either: then the
            # JSON the model marked as such (an object for an integer) beats its text.
            if decoded is _NOT_JSON or not isinstance(coerced, str) or "string" in types:
                decoded = coerced
        return decoded

    def close(self) -> None:
        """The call's closing tag was read."""
        if self._pending:
            self._write_pending(self._pending)
        self._owner._stream_args("}" if self._count else "{}")

    def _write_pending(self, pending: list[tuple[str, str, bool | None]]) -> None:
        """The held parameters, typed once every value is known: the values decide
        the shape (a discriminator read after the value it governs included)."""
        known = dict(self._values)
        for _ in range(2):  # a first reading finds the discriminators, the second types by them
            for name, value, hint in pending:
                siblings = {key: item for key, item in known.items() if key != name}
                types, json_first = self._typing(name, hint, siblings)
                known[name] = self._decode(value, types, json_first, parameter_enum(self._tool, name, siblings))
        parts = []
        for name, _value, _hint in pending:
            parts.append(("{" if self._count == 0 else ", ") + dumps(name) + ": " + dumps(known[name]))
            self._count += 1
        self._owner._stream_args("".join(parts))

    @property
    def in_string(self) -> bool:
        return self._streaming
