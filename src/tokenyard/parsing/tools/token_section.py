"""`TokenSectionToolParser`: the special-token section shape that deepseek_v3,
deepseek_v3_1, solar_open, plamo3 and kimi_k2 share; they differ only in their
tokens and in how the call header names the function (`TokenSectionConfig`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from ...events import ParseEvent, ToolCallDelta
from ..json_stream import JsonStreamError, JsonValueScanner
from ..markers import MarkerSet
from .base import FormatConfig, StepParser, is_function_name

# States.
_OPENING, BETWEEN, _ARGS_START, _ARGS, _AFTER_ARGS, _SKIP = range(6)


def skip_whitespace(buf: str, i: int, fence: bool = False) -> int:
    """The index of the first character at or after `i` that is not whitespace
    (nor, with `fence`, a backtick of a closing ``` fence)."""
    while i < len(buf) and (buf[i].isspace() or (fence and buf[i] == "`")):
        i += 1
    return i


def _at(buf: str, i: int, marker: str) -> bool | None:
    """Whether `marker` starts at `buf[i]`; None while the buffer ends inside it."""
    ahead = buf[i : i + len(marker)]
    if ahead == marker:
        return True
    return None if marker.startswith(ahead) else False


@dataclass(frozen=True)
class TokenSectionConfig(FormatConfig):
    """A special-token section format: its tokens, and how a call's header (the
    text between CALL_BEGIN and HEADER_END) names the function. The start markers
    are the section openers and CALL_BEGIN."""

    section_begins: tuple[str, ...] = ()
    section_ends: tuple[str, ...] = ()
    call_begin: str = ""
    call_end: str = ""
    header_end: str = ""
    # DeepSeek V3 wraps the arguments in a ```json fence.
    fenced: bool = False
    # The header is `PREFIX NAME_AFTER NAME` (DeepSeek V3's `function<｜tool▁sep｜>NAME`);
    # without NAME_AFTER in it, the header is the name. Empty: the header is the name.
    name_after: str = ""
    # The PREFIX before NAME_AFTER is the model's own call id, kept (Solar Open).
    id_before_name: bool = False
    # The header is the name between these two tags (PLaMo 3).
    name_tags: tuple[str, str] | None = None


class TokenSectionToolParser(StepParser):
    """Calls framed by special tokens inside a section:

        SECTION_BEGIN (CALL_BEGIN header HEADER_END json CALL_END)+ SECTION_END

    A format names the tokens in its `TokenSectionConfig` (a format whose header
    says more, Kimi K2's, overrides `_call_name(header)`). A bare CALL_BEGIN (the
    section opener left out) also starts a call; a missing CALL_END before the next
    call or the section's end is tolerated. Nothing is consumed before the function
    name is known, so what turns out not to be a call is released as text, whole.
    """

    config: ClassVar[TokenSectionConfig] = TokenSectionConfig()
    section_begins: ClassVar[tuple[str, ...]]
    section_ends: ClassVar[tuple[str, ...]]
    call_begin: ClassVar[str]
    call_end: ClassVar[str]
    header_end: ClassVar[str]
    fenced: ClassVar[bool]
    name_after: ClassVar[str]
    id_before_name: ClassVar[bool]
    name_tags: ClassVar[tuple[str, str] | None]
    header_limit: ClassVar[int] = 512
    _header_stops: ClassVar[MarkerSet]
    _args_stops: ClassVar[MarkerSet]
    # Argument text with none of these characters can not begin a token (the JSON
    # string's own quotes and escapes are `JsonValueScanner.take_plain`'s to read).
    _plain_args: ClassVar[re.Pattern[str]]
    _state = _OPENING

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "call_begin" in vars(cls):
            cls.start_markers = (*cls.section_begins, cls.call_begin)
            cls._header_stops = MarkerSet(
                (cls.header_end, cls.call_begin, cls.call_end, *cls.section_begins, *cls.section_ends)
            )
            cls._args_stops = MarkerSet((cls.call_end, cls.call_begin, *cls.section_ends))
            firsts = "".join(sorted({m[0] for m in cls._args_stops.markers}))
            cls._plain_args = re.compile("[" + re.escape(firsts) + "]")

    def feed(self, text: str) -> list[ParseEvent]:
        events = self.take_string_text(text)
        return super().feed(text) if events is None else events

    def take_string_text(self, text: str) -> list[ParseEvent] | None:
        call = self._call
        if (
            self._state == _ARGS
            and call is not None
            and not self._buf
            and text
            and self._plain_args.search(text) is None
            and self._scanner.take_plain(text)
        ):
            # The hot path of a long string argument (a file's content): no token and
            # no JSON syntax in it, so it streams as it is, no state machine.
            self._args_begun = True
            call.raw.append(text)
            call.arguments.append(text)
            return [ToolCallDelta(call.index, text)]
        return None

    def _call_name(self, header: str) -> tuple[str, str | None] | None:
        """(function name, the model's own call id or None) from the text between
        CALL_BEGIN and HEADER_END, or None if it names no function."""
        call_id = None
        if self.name_tags is not None:
            opening, closing = self.name_tags
            header = header.strip()
            if not (header.startswith(opening) and header.endswith(closing)):
                return None
            header = header[len(opening) : -len(closing)]
        elif self.name_after:
            prefix, found, name = header.partition(self.name_after)
            if found:
                header = name
                if self.id_before_name:
                    call_id = prefix.strip() or None
        name = header.strip()
        return (name, call_id) if is_function_name(name) else None

    def _enter_region(self, marker: str) -> None:
        self._state = _OPENING

    # ---- steps (StepParser): each returns the new position, or None to wait for more input ----

    def _next_call(self, buf: str, i: int, final: bool) -> int | None:
        """At the region's opening marker or after a call: the next call, the
        section's end, or the end of call syntax."""
        opener = ""
        if self._state == _OPENING:
            opener = next((m for m in self.section_begins if buf.startswith(m, i)), "")
        j = skip_whitespace(buf, i + len(opener))
        at_call = _at(buf, j, self.call_begin)
        if at_call:
            return self._read_header(buf, i, j, final)
        pending = at_call is None
        for end in self.section_ends:
            found = _at(buf, j, end)
            if found:
                self._marker(buf[i : j + len(end)])
                self._exit_region()
                return j + len(end)
            pending = pending or found is None
        if pending and not final:
            return None
        if self._state == _OPENING:
            # The opener is a special token, so it is syntax. Stray words between it
            # and the first call marker are noise inside the section, syntax too;
            # with no call marker soon after, they are text.
            start = i + len(opener)
            found_call = self._starts.find(buf, start)
            if found_call is not None and found_call.group() == self.call_begin:
                if found_call.start() - start <= self.header_limit:
                    # A call follows: the opener and the words before it are syntax.
                    return self._read_header(buf, i, found_call.start(), final)
            elif found_call is None and not final and len(buf) - start <= self.header_limit:
                return None
            # No call follows: the block is not a call section, so it is the model's
            # text, whole and as written (the opener included, as a start marker
            # followed by no call list is in every format).
            self._text(opener)
            self._exit_region()
            return start
        self._marker(buf[i:j])
        self._exit_region()
        return j

    def _read_header(self, buf: str, i: int, at: int, final: bool) -> int | None:
        start = skip_whitespace(buf, at + len(self.call_begin))
        match = self._header_stops.find(buf, start)
        if match is None and not final and len(buf) - start <= self.header_limit:
            return None
        named = None
        if match is not None and match.group() == self.header_end:
            named = self._call_name(buf[start : match.start()])
        if match is None or named is None:
            # Not a call: release the tokens read so far as text and go on after them.
            end = at + len(self.call_begin)
            if self._state == _OPENING:
                self._text(buf[i:end])
            else:
                self._marker(buf[i:at])
                self._text(self.call_begin)
            self._exit_region()
            return end
        self._marker(buf[i:at])
        self._open_call(named[0], buf[at : match.end()], named[1])
        self._scanner = JsonValueScanner()
        self._args_begun = False
        self._fence_seen = False
        self._state = _ARGS_START
        return match.end()

    def _args_start(self, buf: str, i: int, final: bool) -> int | None:
        j = skip_whitespace(buf, i)
        if self.fenced and not self._fence_seen:
            for fence in ("```json", "```"):
                found = _at(buf, j, fence)
                if found is None and not final:
                    self._raw(buf[i:j])
                    return j if j > i else None
                if found:
                    j = skip_whitespace(buf, j + len(fence))
                    self._fence_seen = True
                    break
        self._raw(buf[i:j])
        if j == len(buf) and not final:
            return j if j > i else None
        self._state = _ARGS
        return j

    def _args(self, buf: str, i: int, final: bool) -> int | None:
        stops = self._args_stops
        match = stops.find(buf, i)
        end = match.start() if match is not None else len(buf) - stops.held_suffix(buf, i)
        if end > i:
            self._args_begun = True
            try:
                out, done_at = self._scanner.feed(buf[i:end])
            except JsonStreamError as error:
                self._stream_args(error.valid)
                self._raw(buf[i:end])
                self._state = _SKIP
                return end
            self._stream_args(out)
            if done_at >= 0:
                self._raw(buf[i : i + done_at])
                self._state = _AFTER_ARGS
                return i + done_at
            self._raw(buf[i:end])
        if match is not None and self._scanner.in_string:
            # A marker inside a JSON string is the string's text: only the closing
            # quote ends a string.
            out, _ = self._scanner.feed(match.group())
            self._stream_args(out)
            self._raw(match.group())
            return match.end()
        if match is None:
            if final:
                self._fail_call("truncated", buf[end:])
                self._exit_region()
                return len(buf)
            return end if end > i else None
        # A token arrived before the arguments closed: only a bare scalar or no
        # arguments at all still stand.
        complete = True
        if self._args_begun:
            try:
                self._stream_args(self._scanner.finish())
            except JsonStreamError:
                complete = False
        ends_call = match.group() == self.call_end
        raw = match.group() if ends_call else ""
        if complete:
            self._close_call(raw)
        else:
            self._fail_call("invalid_arguments", raw)
        self._state = BETWEEN
        return match.end() if ends_call else end

    def _after_args(self, buf: str, i: int, final: bool) -> int | None:
        j = skip_whitespace(buf, i, fence=self.fenced)
        self._raw(buf[i:j])
        match = self._args_stops.find(buf, j)
        if match is not None and match.start() == j:
            if match.group() == self.call_end:
                self._close_call(self.call_end)
                self._state = BETWEEN
                return match.end()
            self._close_call()  # the call's end token is missing
            self._state = BETWEEN
            return j
        if j == len(buf) or self._args_stops.is_proper_prefix(buf[j:]):
            if final:
                # The output ended after complete arguments, before the call's end
                # token: the call is whole, so it is recovered (the end-of-output
                # policy in parsing/tools/base.py).
                self._raw(buf[j:])
                self._close_call()
                self._exit_region()
                return len(buf)
            return j if j > i else None
        self._state = _SKIP  # text after the arguments: the call is malformed
        return j

    def _skip(self, buf: str, i: int, final: bool) -> int | None:
        """The rest of a call whose arguments broke belongs to it."""
        return self._fail_through(buf, i, final, self._args_stops, (self.call_end,), then=BETWEEN)

    _STEPS = {
        _OPENING: _next_call,
        BETWEEN: _next_call,
        _ARGS_START: _args_start,
        _ARGS: _args,
        _AFTER_ARGS: _after_args,
        _SKIP: _skip,
    }
