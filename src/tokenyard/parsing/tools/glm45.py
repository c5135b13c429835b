"""`<call>NAME<key>K</key><value>V</value></call>` tool calls (`KeyValueToolParser`),
first GLM-4.5 / GLM-4.6's:

    <tool_call>get_weather
    <arg_key>city</arg_key>
    <arg_value>Tokyo</arg_value>
    <arg_key>days</arg_key>
    <arg_value>3</arg_value>
    </tool_call>

GLM-4.7 writes the same without the newlines (glm47.py); this parser reads both.
Hunyuan (hy_v3.py) and K2 Horizon (k2_horizon.py) write the shape with their own
tags, inside a section. Values are untyped text, typed by the tool's schema
(object/array values arrive as JSON). Models sometimes write a literal `\\n`
between tags: it is skipped like whitespace. A value ends only at its own
`</arg_value>` (tags inside it are its text). Known failure shape handled: a call
with no arguments (`<tool_call>name</tool_call>`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from ..markers import MarkerSet
from ..patterns import always_match, always_search
from .base import BadCallSyntax, JsonCallReader, NotACall, ToolParser, is_function_name
from .xml_args import ArgumentsBuilder


class KeyValueSyntax:
    """The tags of one `<call>NAME<key>K</key><value>V</value></call>` format, and
    what is derived from them once per format. `name_ends`: what may end the name
    besides the first key tag and the call's end (glm45's newline, Hunyuan's
    `<tool_sep>`); `type_tags`: an optional `<type>T</type>` element between a key
    and its value (K2 Horizon), whose text is part of the call's raw only."""

    def __init__(
        self,
        call: tuple[str, str],
        key: tuple[str, str],
        value: tuple[str, str],
        *,
        name_ends: tuple[str, ...] = ("\n",),
        type_tags: tuple[str, str] | None = None,
        section: tuple[str, str] | None = None,
    ):
        self.open, self.close = call
        self.key_open, self.key_close = key
        self.value_open, self.value_close = value
        self.type_tags = type_tags
        self.section: tuple[str, ...] = section or ()
        # Name ends consumed with the name (into the call's raw).
        self.name_end_tokens = frozenset(name_ends)
        self.name_ends = MarkerSet([*name_ends, self.key_open, self.close])
        self.key_stops = MarkerSet([self.key_close, self.key_open, self.value_open, self.close])
        # A value ends only at its own closing tag: other tags inside it are its text.
        self.value_stops = MarkerSet([self.value_close])
        self.close_set = MarkerSet([self.close])
        self.type_stops = MarkerSet([type_tags[1], self.value_open, self.close]) if type_tags else None


GLM = KeyValueSyntax(("<tool_call>", "</tool_call>"), ("<arg_key>", "</arg_key>"), ("<arg_value>", "</arg_value>"))
_WHITESPACE = always_match(r"\s*")
_GAP = always_match(r"(?:\s|\\n)*")  # whitespace, or a literal backslash-n
# A name's trailing gap (and a backslash that may still become a literal `\n`).
_NAME_TAIL = always_search(r"(?:\s|\\n)*\\?\Z")
_KEY_LIMIT = 256


def _bare_name(text: str) -> str:
    return text[: _NAME_TAIL(text).start()]


def _ends_inside(buf: str, at: int, *tags: str) -> bool:
    """Whether the buffer ends at `at` or inside one of `tags` begun there (a lone
    backslash may still become a literal `\\n`)."""
    ahead = buf[at : at + max(map(len, tags))]
    return at + len(ahead) == len(buf) and any(tag.startswith(ahead) for tag in tags)


# States.
_HEAD, _BODY, _KEY, _AFTER_KEY, _VALUE, _SKIP, _TYPE, _JSON, _AFTER_JSON = range(9)


class KeyValueToolParser(ToolParser):
    """The engine for `<call>NAME<key>K</key><value>V</value></call>` formats (see the
    module docstring). A subclass sets `syntaxes`: one per spelling of its tags
    (Hunyuan's tokens come with and without a checkpoint suffix); the start marker
    found picks the spelling for that region. A syntax with `section` tags wraps
    its calls in a section whose tags are markers."""

    syntaxes: ClassVar[tuple[KeyValueSyntax, ...]] = ()
    # A value no schema types is read as JSON where it is JSON (ArgumentsBuilder).
    decode_untyped: ClassVar[bool] = False
    # A call's body may instead be one JSON call object (`{"name": ..., "arguments": ...}`).
    json_bodies: ClassVar[bool] = False
    _by_marker: ClassVar[dict[str, tuple[KeyValueSyntax, bool]]]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "syntaxes" in vars(cls):
            by_marker: dict[str, tuple[KeyValueSyntax, bool]] = {}
            for syntax in cls.syntaxes:
                by_marker[syntax.open] = (syntax, False)
                for tag in syntax.section:
                    by_marker[tag] = (syntax, True)
            cls._by_marker = by_marker
            cls.start_markers = tuple(by_marker)

    def _enter_region(self, marker: str) -> None:
        self._syntax, self._section_tag = self._by_marker[marker]
        self._state = _HEAD
        self._key = ""
        self._type = ""

    def _parse_region(self, buf: str, final: bool) -> int:
        i = 0
        while self._in_region:
            step = self._STEPS[self._state](self, buf, i, final)
            if step is None:  # needs more input
                return i
            i = step
        return i

    # ---- steps: each returns the new position, or None to wait for more input ----

    def _head(self, buf: str, i: int, final: bool) -> int | None:
        """`<tool_call>NAME`: nothing is consumed until the name is known."""
        syntax = self._syntax
        if self._section_tag:  # a section's opening or closing tag: syntax
            tag = next(t for t in syntax.section if buf.startswith(t, i))
            self._marker(tag)
            self._exit_region()
            return i + len(tag)
        start = _WHITESPACE(buf, i + len(syntax.open)).end()
        if self.json_bodies and buf.startswith("{", start):
            self._reader = JsonCallReader(self, buf[i:start])
            self._state = _JSON
            return start
        match = syntax.name_ends.find(buf, start)
        if match is None:
            stop = len(buf) if final else len(buf) - syntax.name_ends.held_suffix(buf, start)
            name = _bare_name(buf[start:stop])
            if not final and (not name or is_function_name(name)) and stop - start <= _KEY_LIMIT:
                return None
            return self._not_a_call(i)
        name = _bare_name(buf[start : match.start()])
        if not is_function_name(name):
            return self._not_a_call(i)
        end = match.end() if match.group() in syntax.name_end_tokens else match.start()
        self._open_call(name, buf[i:end])
        self._arguments = ArgumentsBuilder(self, self._tool(name), decode_untyped=self.decode_untyped)
        self._state = _BODY
        return end

    def _not_a_call(self, i: int) -> int:
        self._text(self._syntax.open)
        self._exit_region()
        return i + len(self._syntax.open)

    def _body(self, buf: str, i: int, final: bool) -> int | None:
        """Between parameters: the next `<arg_key>` or the call's end."""
        syntax = self._syntax
        j = self._gap(buf, i)
        if buf.startswith(syntax.key_open, j):
            self._raw(syntax.key_open)
            self._state = _KEY
            return j + len(syntax.key_open)
        if buf.startswith(syntax.close, j):
            self._arguments.close()
            self._close_call(syntax.close)
            self._exit_region()
            return j + len(syntax.close)
        if _ends_inside(buf, j, syntax.key_open, syntax.close, "\\"):
            if not final:
                return j if j > i else None
            # The output ended between parameters: every value so far closed.
            self._arguments.close()
            self._close_at_end_of_output(buf[j:])
            self._exit_region()
            return len(buf)
        self._state = _SKIP
        return j

    def _key_text(self, buf: str, i: int, final: bool) -> int | None:
        syntax = self._syntax
        match = syntax.key_stops.find(buf, i)
        if match is None:
            end = len(buf) - syntax.key_stops.held_suffix(buf, i)
            self._raw(buf[i:end])
            self._key += buf[i:end]
            if final:
                return self._truncated(buf, end)
            if len(self._key) > _KEY_LIMIT:
                self._state = _SKIP
            return end if end > i else None
        self._raw(buf[i : match.start()])
        self._key += buf[i : match.start()]
        if match.group() != syntax.key_close:
            self._state = _SKIP
            return match.start()
        self._raw(syntax.key_close)
        self._state = _AFTER_KEY
        return match.end()

    def _after_key(self, buf: str, i: int, final: bool) -> int | None:
        syntax = self._syntax
        j = self._gap(buf, i)
        if buf.startswith(syntax.value_open, j):
            self._raw(syntax.value_open)
            self._arguments.begin(self._key.strip(), self._string_hint())
            self._key = ""
            self._type = ""
            self._state = _VALUE
            return j + len(syntax.value_open)
        types = syntax.type_tags
        if types is not None and not self._type and buf.startswith(types[0], j):
            self._raw(types[0])
            self._state = _TYPE
            return j + len(types[0])
        tags = (syntax.value_open, types[0]) if types is not None and not self._type else (syntax.value_open,)
        if _ends_inside(buf, j, *tags, "\\"):
            return self._truncated(buf, j) if final else (j if j > i else None)
        self._state = _SKIP
        return j

    def _type_text(self, buf: str, i: int, final: bool) -> int | None:
        """A parameter's declared type (`<arg_type>string</arg_type>`)."""
        syntax = self._syntax
        stops = syntax.type_stops
        assert stops is not None and syntax.type_tags is not None
        match = stops.find(buf, i)
        if match is None:
            end = len(buf) - stops.held_suffix(buf, i)
            self._raw(buf[i:end])
            self._type += buf[i:end]
            if final:
                return self._truncated(buf, end)
            if len(self._type) > _KEY_LIMIT:
                self._state = _SKIP
            return end if end > i else None
        self._raw(buf[i : match.start()])
        self._type += buf[i : match.start()]
        if match.group() != syntax.type_tags[1]:
            self._state = _SKIP
            return match.start()
        self._raw(match.group())
        self._type = self._type.strip() or "any"
        self._state = _AFTER_KEY
        return match.end()

    def _string_hint(self) -> bool | None:
        """What a declared type says: a string, or not (then JSON); None defers to
        the schema."""
        base = self._type.split("[", 1)[0].strip().lower()
        if not base or base == "any":
            return None
        return base in ("string", "str")

    def _value(self, buf: str, i: int, final: bool) -> int | None:
        if i >= len(buf) and not final:
            return None  # everything so far is streamed; wait for more
        stops = self._syntax.value_stops
        match = stops.find(buf, i)
        if match is not None:
            end = match.start()
        elif stops.could_start(buf, i):
            end = len(buf) - stops.held_suffix(buf, i)
        else:  # the common case: plain value text, nothing to hold back
            end = len(buf)
        self._raw(buf[i:end])
        self._arguments.text(buf[i:end])
        if match is None:
            if final:
                self._arguments.end()
                return self._truncated(buf, end)
            return end if end > i else None
        self._arguments.end()
        self._state = _BODY
        self._raw(match.group())
        return match.end()

    def _skip(self, buf: str, i: int, final: bool) -> int | None:
        """The rest of a call whose syntax broke belongs to it."""
        close_set = self._syntax.close_set
        match = close_set.find(buf, i)
        if match is None:
            end = len(buf) if final else len(buf) - close_set.held_suffix(buf, i)
            self._raw(buf[i:end])
            if final:
                self._fail_call("invalid_arguments")
                self._exit_region()
            return end if end > i or final else None
        self._fail_call("invalid_arguments", buf[i : match.end()])
        self._exit_region()
        return match.end()

    def _json_body(self, buf: str, i: int, final: bool) -> int | None:
        """A JSON call object as the call's body, streamed as it arrives."""
        if i == len(buf) and not final:
            return None
        reader = self._reader
        try:
            end = reader.feed(buf[i:])
        except NotACall as error:
            self._text("".join(reader.pre_raw))
            self._exit_region()
            return i + error.consumed
        except BadCallSyntax as error:
            self._state = _SKIP  # the rest of the call up to its end tag is its raw
            return i + error.consumed
        if end >= 0:
            self._state = _AFTER_JSON
            return i + end
        if final:
            if reader.started:
                self._fail_call("truncated")
            else:
                self._text("".join(reader.pre_raw))
            self._exit_region()
        return len(buf)

    def _after_json(self, buf: str, i: int, final: bool) -> int | None:
        """After the object: the call's end tag."""
        close = self._syntax.close
        j = _WHITESPACE(buf, i).end()
        if buf.startswith(close, j):
            self._close_call(buf[i : j + len(close)])
            self._exit_region()
            return j + len(close)
        if not final and _ends_inside(buf, j, close):
            return None
        # The object is complete; what follows it without the end tag is text.
        self._close_call()
        self._exit_region()
        return i

    def _gap(self, buf: str, i: int) -> int:
        """Skip the whitespace between tags into the call's raw."""
        j = _GAP(buf, i).end()
        self._raw(buf[i:j])
        return j

    def _truncated(self, buf: str, i: int) -> int:
        self._raw(buf[i:])
        self._arguments.close()
        self._fail_call("truncated")
        self._exit_region()
        return len(buf)

    _STEPS: ClassVar[dict[int, Callable[..., int | None]]] = {
        _HEAD: _head,
        _BODY: _body,
        _KEY: _key_text,
        _AFTER_KEY: _after_key,
        _VALUE: _value,
        _SKIP: _skip,
        _TYPE: _type_text,
        _JSON: _json_body,
        _AFTER_JSON: _after_json,
    }


class Glm45ToolParser(KeyValueToolParser):
    name = "glm45"
    syntaxes = (GLM,)
    # vLLM's glm4_moe and Dynamo's glm47 parsers read an undeclared value as JSON
    # where it is JSON (`42` is 42, `{"a": 1}` an object).
    decode_untyped = True
