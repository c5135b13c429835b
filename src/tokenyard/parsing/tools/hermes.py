"""Hermes / Qwen2.5 / Qwen3: `<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`."""

from __future__ import annotations

from typing import ClassVar

from ...events import ParseEvent, TextDelta, ToolCallDelta
from ..markers import MarkerSet
from .base import BadCallSyntax, JsonCallReader, NotACall, ToolParser

_OPEN = "<tool_call>"
_CLOSE = "</tool_call>"

_MARKER, _OBJECT, _AFTER_OBJECT, _SKIP_TO_CLOSE = range(4)


class HermesToolParser(ToolParser):
    """One JSON call object between an opening and a closing marker; a family
    with other markers (ernie45, internlm) sets `start_markers` and `close`."""

    name = "hermes"
    aliases: ClassVar[tuple[str, ...]] = ("qwen25",)
    start_markers: ClassVar[tuple[str, ...]] = (_OPEN,)
    close: ClassVar[str] = _CLOSE
    _close_set: ClassVar[MarkerSet] = MarkerSet([_CLOSE])

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._close_set = MarkerSet([cls.close])

    _state = _MARKER
    _reader: JsonCallReader | None = None

    def feed(self, text: str) -> list[ParseEvent]:
        # Hot paths, one call deep: prose that can not start a call is text; a token
        # of plain text inside a string argument (file contents in a write call) is
        # both the call's raw text and an arguments fragment, as is.
        if not self._in_region:
            if not self._buf and not self._starts.could_start(text):
                return [TextDelta(text)] if text else []
        else:
            events = self.take_string_text(text)
            if events is not None:
                return events
        return super().feed(text)

    def take_string_text(self, text: str) -> list[ParseEvent] | None:
        if self._state == _OBJECT and not self._buf and text:
            reader = self._reader
            call = self._call
            scanner = reader.streaming_scanner if reader is not None else None
            if scanner is not None and call is not None and scanner.take_plain(text):
                call.raw.append(text)
                call.arguments.append(text)
                return [ToolCallDelta(call.index, text)]
        return None

    def _enter_region(self, marker: str) -> None:
        self._state = _MARKER
        self._open = marker
        self._reader = None

    def _parse_region(self, buf: str, final: bool) -> int:
        state = self._state
        if state == _MARKER:
            self._reader = JsonCallReader(self, self._open)
            self._state = _OBJECT
            return len(self._open)
        if state == _OBJECT:
            reader = self._reader
            assert reader is not None
            try:
                end = reader.feed(buf)
            except NotACall as error:
                self._text("".join(reader.pre_raw))
                self._exit_region()
                return error.consumed
            except BadCallSyntax as error:
                self._state = _SKIP_TO_CLOSE
                return error.consumed
            if end >= 0:
                self._close_call()
                self._state = _AFTER_OBJECT
                return end
            if final:
                if reader.started:
                    self._fail_call("truncated")
                else:
                    self._text("".join(reader.pre_raw))
                self._exit_region()
            return len(buf)
        if state == _AFTER_OBJECT:
            stripped = buf.lstrip()
            lead = len(buf) - len(stripped)
            close = self.close
            if stripped.startswith(close):
                self._marker(buf[: lead + len(close)])
                self._exit_region()
                return lead + len(close)
            if (not stripped or close.startswith(stripped)) and not final:
                return 0
            if stripped[:1] == "," or stripped[:1] == "{":
                # Several call objects in one block (`{...}, {...}</tool_call>`): the
                # separator opens the next call's raw, as `<tool_call>` opened the first.
                after = lead + (stripped[0] == ",")
                after += len(buf) - after - len(buf[after:].lstrip())
                if after == len(buf) and not final:
                    return 0
                self._reader = JsonCallReader(self, buf[:after])
                self._state = _OBJECT
                return after
            # No closing tag (the model went straight on): the call stands.
            self._marker(buf[:lead])
            self._exit_region()
            return lead
        # _SKIP_TO_CLOSE: the rest of a call whose arguments broke belongs to it.
        return self._fail_until(buf, self._close_set, final)
