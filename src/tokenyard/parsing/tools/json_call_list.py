"""Calls as a list of JSON objects after a start marker, the shape shared by
nemotron_deci, jamba, phi4, mistral (pre-v11), llama3_json and a list inside a
hermes block (hermes.py):

    <TOOLCALL>[{"name": "a", "arguments": {...}}, {"name": "b", "arguments": {...}}]</TOOLCALL>
    <|python_tag|>{"name": "a", "parameters": {...}}; {"name": "b", "parameters": {...}}

A format that expects a list also takes one bare object (`<TOOLCALL>{...}`, as
models and Dynamo's fixtures write it). Each object is one call (read by
`JsonCallReader`) whose raw is exactly the object;
the start marker, `[`, separators, `]` and a closing tag are Markers. What is read
before the first call is announced stays pending: a start marker followed by
something that is not a call list comes out as text, whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from ...conversation import ToolSpec
from ...events import ParseEvent, TextDelta, ToolCallDelta
from ..markers import MarkerSet
from .base import CallIds, FormatConfig, JsonCallReader, split_before, starts_with
from .call_list import WHITESPACE, CallListParser

# States (the public ones are for variants); subclasses number theirs from
# `FIRST_SUBCLASS_STATE`.
MARKER, LIST_OPEN, ITEM, OBJECT, AFTER_ITEM, _CLOSE_TAG, SKIP = range(7)
FIRST_SUBCLASS_STATE = 16
# `OpeningCallListParser`: the output has begun and nothing has decided it yet.
OUTPUT_START = 15


@dataclass(frozen=True)
class JsonCallListConfig(FormatConfig):
    """A JSON call-list format: its start markers and punctuation."""

    # Markers that begin a call list.
    start_markers: tuple[str, ...] = ()
    # Those of them the tokenizer writes as plain text (not special tokens): until a
    # call of the list is delivered, the marker and what follows it up to a call go
    # with that call, so a call that never completes shows them with its text (a
    # special token is never text: it stays a marker).
    text_start_markers: tuple[str, ...] = ()
    # A tag that closes the section; it may also stand in for a missing `]`.
    close_tag: str = ""
    # (start marker, its closing tag) where the tag depends on the marker found
    # (generic_json, xlam); a marker not listed here has none.
    close_tags: tuple[tuple[str, str], ...] = ()
    # `[...]` around the objects (llama3_json has bare objects).
    bracketed: bool = True
    separator: str = ","
    # A newline between two call objects also separates them (llama3_json).
    newline_separates: bool = False
    # `{{...}}` is the call object inside (`ToolParser.doubled_braces`).
    doubled_braces: bool = False


class JsonCallListParser(CallListParser):
    """A start marker, then JSON call objects, as its `JsonCallListConfig` says."""

    config: ClassVar[JsonCallListConfig] = JsonCallListConfig()
    bracketed: ClassVar[bool]
    separator: ClassVar[str]
    newline_separates: ClassVar[bool]
    close_tag: str
    close_tags: ClassVar[tuple[tuple[str, str], ...]]
    text_start_markers: ClassVar[tuple[str, ...]]
    # Reads one call object (a format whose objects name their keys otherwise
    # brings its own).
    reader: ClassVar[type[JsonCallReader]] = JsonCallReader
    # The states in which a call object's reader runs (a subclass with an object
    # state of its own adds it).
    _object_states: ClassVar[frozenset[int]] = frozenset((OBJECT,))

    def __init__(self, tools: Iterable[ToolSpec] | None = None, call_ids: CallIds | None = None) -> None:
        super().__init__(tools, call_ids)
        # Where the rest of a call with broken arguments ends: its section's
        # closing tag, else the next call's start marker (or the end of output).
        self._skip_to = MarkerSet([self.close_tag]) if self.close_tag else self._starts
        self._state = MARKER
        self._pending = ""

    def feed(self, text: str) -> list[ParseEvent]:
        # Hot paths, one call deep: prose that can not start a call is text (the base
        # class's idle path, inlined), and plain text inside a string argument streams
        # as is (`take_string_text`).
        if self._in_region:
            events = self.take_string_text(text)
            if events is not None:
                return events
        elif (
            not self._buf
            and self._quotes is None
            and (self._starts.lead not in text or not self._starts.could_start(text))
        ):
            return [TextDelta(text)] if text else []
        return super().feed(text)

    def take_string_text(self, text: str) -> list[ParseEvent] | None:
        # A token of plain text inside a string argument (file contents in a write
        # call) is both the call's raw text and an arguments fragment, as is.
        if self._state in self._object_states and not self._buf and text:
            reader = self._reader
            call = self._call
            scanner = reader.streaming_scanner if reader is not None else None
            if scanner is not None and call is not None and scanner.take_plain(text):
                call.raw.append(text)
                call.arguments.append(text)
                return [ToolCallDelta(call.index, text)]
        return None

    def _enter_region(self, marker: str) -> None:
        self._state = MARKER
        self._start_marker = marker
        self._pending = ""  # read, not yet known to be syntax (Marker) or text
        self._reader: JsonCallReader | None = None
        self._any_call = False
        self._delivered = False
        self._single = False  # one call object where the format expects a list
        if self.close_tags:
            self.close_tag = next((tag for start, tag in self.close_tags if start == marker), "")
            self._skip_to = MarkerSet([self.close_tag]) if self.close_tag else self._starts

    def _after_start_marker(self) -> int:
        # A bare `[` start marker is the list's own bracket: items follow (xlam).
        return LIST_OPEN if self.bracketed and self._start_marker != "[" else ITEM

    def _lead_is_text(self) -> bool:
        return not self._delivered and self._start_marker in self.text_start_markers

    def _accepts_call_name(self, name: str) -> bool:
        # A bare `[` is weak evidence (prose keeps its brackets): it starts a call
        # list only where a declared tool's name follows.
        return self._start_marker != "[" or self._any_call or self.tools is None or name in self.tools

    # ---- the list ---------------------------------------------------------------

    def _step(self, buf: str, final: bool) -> int:
        state = self._state
        if state == MARKER:
            self._pending = self._start_marker
            self._state = self._after_start_marker()
            return len(self._start_marker)
        if state == OBJECT:
            return self._parse_object(buf, final)
        if state == SKIP:
            return self._skip_broken_call(buf, final)
        i = self._pend_whitespace(buf, final)
        if i == len(buf):
            return i
        c = buf[i]
        if state == LIST_OPEN:
            if c == "[":
                self._pending += c
                self._state = ITEM
                return i + 1
            if c == "{":  # `<TOOLCALL>{...}`: a single call without its list
                self._single = True
                self._reader = self.reader(self)
                self._state = OBJECT
                return i
        elif state == ITEM:
            if c == "{":
                self._reader = self.reader(self)
                self._state = OBJECT
                return i
            if c == "]" and self.bracketed and self._any_call:  # a trailing comma
                return self._list_closed(i + 1)
            if c == "]" and self.bracketed and self.close_tag:
                # `<TOOLCALL>[]</TOOLCALL>`: an empty list, closed, is syntax without calls.
                j = WHITESPACE(buf, i + 1).end()
                found = starts_with(buf[j:], self.close_tag)
                if found:
                    self._pending += buf[i:j] + self.close_tag
                    self._end_list(closed=True)
                    return j + len(self.close_tag)
                if found is None and not final:
                    return i
        elif state == AFTER_ITEM:
            if self._single and not self.close_tag:
                self._end_list(closed=True)
                return i
            if self._single:
                pass  # only the closing tag may follow
            elif c == self.separator:
                self._pending += c
                self._state = ITEM
                return i + 1
            elif c == "{" and self.newline_separates and "\n" in self._pending:
                self._state = ITEM
                return i
            if c == "]" and self.bracketed and not self._single:
                return self._list_closed(i + 1)
            if self.close_tag:  # `]` left out before the closing tag
                found = starts_with(buf[i:], self.close_tag)
                if found:
                    self._pending += self.close_tag
                    self._end_list(closed=True)
                    return i + len(self.close_tag)
                if found is None and not final:
                    return i
        elif state == _CLOSE_TAG:
            found = starts_with(buf[i:], self.close_tag)
            if found:
                self._pending += self.close_tag
                self._end_list()
                return i + len(self.close_tag)
            if found is None and not final:
                return i
        # Not (or no longer) a call list.
        self._end_list()
        return i

    def _list_closed(self, end: int) -> int:
        self._pending += "]"
        if self.close_tag:
            self._state = _CLOSE_TAG
        else:
            self._end_list(closed=True)
        return end

    def _end_list(self, closed: bool = False) -> None:
        super()._end_list(closed or self._state == _CLOSE_TAG)

    def _parse_object(self, buf: str, final: bool) -> int:
        reader = self._reader
        assert reader is not None
        end = self._read_object(reader, buf, final, closed=AFTER_ITEM, broken=SKIP, recover=True)
        self._any_call = self._any_call or self._state == AFTER_ITEM
        return end

    def _skip_broken_call(self, buf: str, final: bool) -> int:
        """The rest of a call whose arguments broke belongs to it, up to the
        section's closing tag (included) or the next start marker (not included)."""
        end, match = split_before(buf, self._skip_to, final)
        if match is not None:
            end = match.end() if match.group() == self.close_tag else match.start()
            self._fail_call("invalid_arguments", buf[:end])
            self._exit_region()
            return end
        self._raw(buf[:end])
        if final:
            self._fail_call("invalid_arguments")
            self._exit_region()
        return end

    # ---- hooks ------------------------------------------------------------------

    @property
    def in_call_region(self) -> bool:
        return self._in_region and (self._call_open or self._state == OBJECT)


class OpeningCallListParser(JsonCallListParser):
    """A call-list format whose calls may also open the output without their start
    marker (where a decoder that drops special tokens leaves them): Llama 3's JSON
    (a bare object), Dynamo's generic JSON (a bare object or list). The parser starts
    in `OUTPUT_START`, inside the region, and sets `_bare` when a bare call begins. A
    bare call must name a declared tool: JSON opening an answer may be the answer
    itself."""

    def __init__(self, tools: Iterable[ToolSpec] | None = None, call_ids: CallIds | None = None) -> None:
        super().__init__(tools, call_ids)
        self._enter_region("")
        self._in_region = True
        self._state = OUTPUT_START

    def _step(self, buf: str, final: bool) -> int:
        if self._state != OUTPUT_START:
            return super()._step(buf, final)
        i = WHITESPACE(buf).end()
        self._text(buf[:i])  # whitespace decides nothing: no need to hold it
        if i < len(buf) and buf[i] in ("{[" if self.bracketed else "{"):
            if self.bracketed:
                self._state = LIST_OPEN  # an object (a single call) or a list of calls
            else:
                self._reader = self.reader(self)
                self._state = OBJECT
            self._bare = True
        elif i < len(buf) or final:
            self._exit_region()  # not bare JSON; the scan for the start markers goes on
        return i

    def _enter_region(self, marker: str) -> None:
        super()._enter_region(marker)
        self._bare = False  # after a start marker: the model said it is calling

    def _lead_is_text(self) -> bool:
        return not self._delivered and self._start_marker in self.text_start_markers

    def _accepts_call_name(self, name: str) -> bool:
        return not self._bare or self.tools is None or name in self.tools

    @property
    def in_call_region(self) -> bool:
        return self._state != OUTPUT_START and super().in_call_region

    def release_held(self) -> list[ParseEvent]:
        if self._in_region and self._state == OUTPUT_START:
            if not self._buf:
                return []  # nothing is held: the first text after reasoning opens the output
            # What was held (a `[` that might open a list) has a marker right after
            # it, so it opens no bare call: it is text.
            return self._held_is_text()
        return super().release_held()
