"""Hermes / Qwen2.5 / Qwen3: `<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`."""

from __future__ import annotations

from typing import ClassVar

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

    def _enter_region(self, marker: str) -> None:
        self._state = _MARKER
        self._open = marker
        self._reader: JsonCallReader | None = None

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
            # No closing tag (the model went straight on): the call stands.
            self._marker(buf[:lead])
            self._exit_region()
            return lead
        # _SKIP_TO_CLOSE: the rest of a call whose arguments broke belongs to it.
        return self._fail_until(buf, self._close_set, final)
