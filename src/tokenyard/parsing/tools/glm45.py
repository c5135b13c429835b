"""`<call>NAME<key>K</key><value>V</value></call>` tool calls (`KeyValueToolParser`),
first GLM-4.5 / GLM-4.6's:

    <tool_call>get_weather
    <arg_key>city</arg_key>
    <arg_value>Tokyo</arg_value>
    <arg_key>days</arg_key>
    <arg_value>3</arg_value>
    </tool_call>

GLM-4.7 writes the same without the newlines; this parser reads both. Hunyuan
and K2 Horizon write the shape with their own tags, inside a section (their rows
in formats.py). Values are untyped text, typed by the tool's schema
(object/array values arrive as JSON). Models sometimes write a literal `\\n`
between tags: it is skipped like whitespace. A value ends only at its own
`</arg_value>` (tags inside it are its text). Known failure shape handled: a call
with no arguments (`<tool_call>name</tool_call>`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from ...conversation import ToolSpec
from ...events import ParseEvent, TextDelta
from ..coercion import tool_properties
from ..markers import MarkerSet
from ..patterns import always_match, always_search
from .base import FormatConfig, JsonCallReader, StepParser, ToolParser, is_function_name
from .xml_args import ArgumentsBuilder, take_value_text


class KeyValueSyntax:
    """The tags of one `<call>NAME<key>K</key><value>V</value></call>` format, and
    what is derived from them once per format. `name_ends`: what may end the name
    besides the first key tag and the call's end (glm45's newline, Hunyuan's
    `<tool_sep>`); `type_tags`: an optional `<type>T</type>` element between a key
    and its value (K2 Horizon), whose text is part of the call's raw only. A value
    tag of None: the key's closing tag opens the value (Solar Open 2's
    `<|tool_arg:start|>K<|tool_arg:value|>V<|tool_arg:end|>`). `special_tokens`: the
    tags are special tokens, so a dropped closing tag is read where the next tag
    shows it (the next call's opening tag ends a call; inside a value, the key of a
    declared parameter the call has not given yet, a declared tool's call, or the
    call's closing tag that the end of the output or a declared tool's call
    follows, ends the value), and an opening tag that starts no call (with the
    name line the next call's opening tag cut short) is a marker."""

    def __init__(
        self,
        call: tuple[str, str],
        key: tuple[str, str],
        value: tuple[str | None, str],
        *,
        name_ends: tuple[str, ...] = ("\n",),
        type_tags: tuple[str, str] | None = None,
        section: tuple[str, str] | None = None,
        special_tokens: bool = False,
    ):
        self.open, self.close = call
        self.key_open, self.key_close = key
        opener, self.value_close = value
        # The key's closer opens the value where the format has no tag of its own.
        self.value_at_key_close = opener is None
        self.value_open = self.key_close if opener is None else opener
        self.type_tags = type_tags
        self.section: tuple[str, ...] = section or ()
        self.special_tokens = special_tokens
        # Where a call may end without its closing tag (special tokens: the next call).
        self.call_ends = (self.close, self.open) if special_tokens else (self.close,)
        # Name ends consumed with the name (into the call's raw).
        self.name_end_tokens = frozenset(name_ends)
        self.name_ends = MarkerSet([*name_ends, self.key_open, *self.call_ends])
        self.key_stops = MarkerSet([self.key_close, self.key_open, self.value_open, *self.call_ends])
        # A value ends at its own closing tag: other tags inside it are its text, except
        # (special tokens) where one shows the closing tag was dropped (`_value_ends`).
        self.value_stops = MarkerSet(
            [self.value_close, self.key_open, self.close, self.open] if special_tokens else [self.value_close]
        )
        self.close_set = MarkerSet(self.call_ends)
        # Value text with none of these characters neither begins a tag that may end
        # the value nor needs escaping in JSON: it streams as it is.
        firsts = "".join(sorted({m[0] for m in self.value_stops.markers}))
        self.plain_value = re.compile("[" + re.escape(firsts) + r'"\\\x00-\x1f]').search
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


class _Ignored:
    """Where a repeated key's value goes: into the call's raw only."""

    def text(self, chunk: str) -> None:
        pass

    def end(self) -> None:
        pass


_IGNORED = _Ignored()

# States.
_HEAD, _BODY, _KEY, _AFTER_KEY, _VALUE, _SKIP, _TYPE, _JSON, _AFTER_JSON = range(9)


@dataclass(frozen=True)
class KeyValueConfig(FormatConfig):
    """A `<call>NAME<key>K</key><value>V</value></call>` format."""

    # One syntax per spelling of its tags (Hunyuan's tokens come with and without a
    # checkpoint suffix); the start marker found picks the spelling for that region.
    syntaxes: tuple[KeyValueSyntax, ...] = ()
    # A value no schema types is read as JSON where it is JSON (ArgumentsBuilder).
    decode_untyped: bool = False
    # A call's body may instead be one JSON call object (`{"name": ..., "arguments": ...}`).
    json_bodies: bool = False
    # A key the call already gave keeps its first value (the stream already sent it;
    # vLLM's solar_open2), rather than being written again (the last one wins when the
    # arguments are read: vLLM's hy_v4).
    first_value_wins: bool = False


class KeyValueToolParser(StepParser):
    """The engine for `<call>NAME<key>K</key><value>V</value></call>` formats (see the
    module docstring), configured by a `KeyValueConfig`. A syntax with `section`
    tags wraps its calls in a section whose tags are markers."""

    config: ClassVar[KeyValueConfig]
    syntaxes: ClassVar[tuple[KeyValueSyntax, ...]]
    decode_untyped: ClassVar[bool]
    json_bodies: ClassVar[bool]
    first_value_wins: ClassVar[bool]
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

    def feed(self, text: str) -> list[ParseEvent]:
        if not self._in_region:
            starts = self._starts
            if not self._buf and self._quotes is None and (starts.lead not in text or starts.trigger(text) is None):
                return [TextDelta(text)] if text else []  # prose: the base class's idle path, inlined
        elif self._state == _VALUE and not self._buf and text:
            call, sink = self._call, self._value_sink
            if call is not None and isinstance(sink, ArgumentsBuilder):
                syntax = self._syntax
                events = take_value_text(self, call, sink, text, syntax.plain_value, syntax.value_stops)
                if events is not None:
                    return events
        return ToolParser.feed(self, text)

    def _enter_region(self, marker: str) -> None:
        self._syntax, self._section_tag = self._by_marker[marker]
        self._state = _HEAD
        self._key = ""
        self._type = ""

    # ---- steps (StepParser): each returns the new position, or None to wait for more input ----

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
        if match.group() == syntax.open:
            # The next call began before this one's name line ended: an abandoned
            # call head, syntax that lost its context.
            self._marker(buf[i : match.start()])
            self._exit_region()
            return match.start()
        name = _bare_name(buf[start : match.start()])
        if not is_function_name(name):
            return self._not_a_call(i)
        end = match.end() if match.group() in syntax.name_end_tokens else match.start()
        self._open_call(name, buf[i:end])
        self._arguments = ArgumentsBuilder(self, self._tool(name), decode_untyped=self.decode_untyped)
        self._given: set[str] = set()
        self._state = _BODY
        return end

    def _not_a_call(self, i: int) -> int:
        (self._marker if self._syntax.special_tokens else self._text)(self._syntax.open)
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
        if syntax.special_tokens and buf.startswith(syntax.open, j):
            # The model dropped this call's closing tag: the next call begins.
            self._arguments.close()
            self._close_at_end_of_output()
            self._exit_region()
            return j
        if _ends_inside(buf, j, syntax.key_open, *syntax.call_ends, "\\"):
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
        self._key, match, at = self._short_text(buf, i, final, syntax.key_stops, self._key)
        if match is None:
            return at
        if match.group() == syntax.key_open and syntax.special_tokens:
            # The model began the key again: the abandoned one is no argument.
            self._raw(syntax.key_open)
            self._key = ""
            return match.end()
        if match.group() != syntax.key_close:
            self._state = _SKIP
            return match.start()
        self._raw(syntax.key_close)
        if syntax.value_at_key_close:
            return self._open_value(match.end())
        self._state = _AFTER_KEY
        return match.end()

    def _short_text(
        self, buf: str, i: int, final: bool, stops: MarkerSet, so_far: str
    ) -> tuple[str, re.Match[str] | None, int | None]:
        """A key's or a type's text read on from `i` into the call's raw: (the text so
        far, the first of `stops` that ends it, or None and where to go on). Longer
        than `_KEY_LIMIT`, it is no key: the call is skipped."""
        match = stops.find(buf, i)
        end = match.start() if match is not None else len(buf) - stops.held_suffix(buf, i)
        self._raw(buf[i:end])
        text = so_far + buf[i:end]
        if match is not None:
            return text, match, None
        if final:
            return text, None, self._truncated(buf, end)
        if len(text) > _KEY_LIMIT:
            self._state = _SKIP
        return text, None, end if end > i else None

    def _after_key(self, buf: str, i: int, final: bool) -> int | None:
        syntax = self._syntax
        j = self._gap(buf, i)
        if buf.startswith(syntax.value_open, j):
            self._raw(syntax.value_open)
            return self._open_value(j + len(syntax.value_open))
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

    def _open_value(self, at: int) -> int:
        key = self._key.strip()
        if key in self._given and self.first_value_wins:
            # A repeated key: the first value is what the stream already sent.
            self._value_sink: ArgumentsBuilder | _Ignored = _IGNORED
        else:
            self._given.add(key)
            self._value_sink = self._arguments
            self._arguments.begin(key, self._string_hint())
        self._key = ""
        self._type = ""
        self._state = _VALUE
        return at

    def _type_text(self, buf: str, i: int, final: bool) -> int | None:
        """A parameter's declared type (`<arg_type>string</arg_type>`)."""
        syntax = self._syntax
        stops = syntax.type_stops
        assert stops is not None and syntax.type_tags is not None
        self._type, match, at = self._short_text(buf, i, final, stops, self._type)
        if match is None:
            return at
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
        if match is not None and match.group() != self._syntax.value_close:
            ends = self._value_ends(buf, match, final)
            if ends is False:  # a tag inside the value is its text
                end = match.end()
                match = None
            elif ends is None:  # what follows the tag decides: wait for it
                match = None
                final = False
        self._raw(buf[i:end])
        self._value_sink.text(buf[i:end])
        if match is None:
            if final:
                self._value_sink.end()
                return self._truncated(buf, end)
            return end if end > i else None
        self._value_sink.end()
        self._state = _BODY
        if match.group() != self._syntax.value_close:
            return end  # the closing tag was dropped: the tag that showed it is read next
        self._raw(match.group())
        return match.end()

    def _value_ends(self, buf: str, match: re.Match[str], final: bool) -> bool | None:
        """Whether a tag met inside a value (special-token syntax) shows that the
        value's closing tag was dropped: the key of a declared parameter the call has
        not given yet, a declared tool's call, or the call's closing tag that nothing
        but the end of the output, or a declared tool's call, follows (None while that
        is unknown)."""
        syntax = self._syntax
        at = match.end()
        if match.group() == syntax.key_open:
            stop = syntax.key_stops.find(buf, at)
            if stop is None:
                return None if not final and len(buf) - at <= _KEY_LIMIT else False
            key = buf[at : stop.start()].strip()
            return (
                stop.group() == syntax.key_close
                and key not in self._given
                and key in tool_properties(self._tool_of_call())
            )
        if match.group() == syntax.open:
            return self._call_head(buf[at:], final)
        rest = buf[at:].lstrip()
        if not rest:
            return True if final else None
        if rest.startswith(syntax.open):
            return self._call_head(rest[len(syntax.open) :], final)
        return None if not final and syntax.open.startswith(rest) else False

    def _call_head(self, head: str, final: bool) -> bool | None:
        """Whether `head`, after a call's opening tag, names a declared tool on its
        own line (None while that is unknown)."""
        newline = head.find("\n", 0, _KEY_LIMIT)
        if newline < 0:
            return None if not final and len(head) < _KEY_LIMIT else False
        name = head[:newline].strip()
        return is_function_name(name) and (self.tools is None or name in self.tools)

    def _tool_of_call(self) -> ToolSpec | None:
        return self._tool(self._call.name) if self._call is not None else None

    def _skip(self, buf: str, i: int, final: bool) -> int | None:
        """The rest of a call whose syntax broke belongs to it."""
        return self._fail_through(buf, i, final, self._syntax.close_set, (self._syntax.close,))

    def _json_body(self, buf: str, i: int, final: bool) -> int | None:
        """A JSON call object as the call's body, streamed as it arrives."""
        if i == len(buf) and not final:
            return None
        reader = self._reader
        # A broken call's rest, up to its end tag, is its raw.
        end, stopped = self._feed_object(reader, buf[i:], _SKIP)
        if stopped:
            return i + end
        if end >= 0:
            self._state = _AFTER_JSON
            return i + end
        if final:
            self._json_call_cut(reader)
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

    _STEPS = {
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
    # vLLM's glm4_moe and Dynamo's glm47 parsers read an undeclared value as JSON
    # where it is JSON (`42` is 42, `{"a": 1}` an object).
    config = KeyValueConfig(syntaxes=(GLM,), decode_untyped=True)
