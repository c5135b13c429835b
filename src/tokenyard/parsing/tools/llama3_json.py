"""Llama 3.x JSON tool calls, after `<|python_tag|>` or as bare JSON opening the
output; several calls are separated by `;` or a newline and run to the end of output:

    <|python_tag|>{"name": "get_weather", "parameters": {"city": "Tokyo", "days": 3}}; {"name": ...}
    {"name": "get_weather", "parameters": {"city": "Tokyo", "days": 3}}
"""

from __future__ import annotations

from collections.abc import Iterable

from ...conversation import ToolSpec
from ...events import ParseEvent
from .base import CallIds, JsonCallReader
from .json_call_list import FIRST_SUBCLASS_STATE, OBJECT, WHITESPACE, JsonCallListParser

_OUTPUT_START = FIRST_SUBCLASS_STATE


class Llama3JsonToolParser(JsonCallListParser):
    name = "llama3_json"
    aliases = ("llama4_json",)
    start_markers = ("<|python_tag|>",)
    bracketed = False
    separator = ";"
    newline_separates = True

    def __init__(self, tools: Iterable[ToolSpec] | None = None, call_ids: CallIds | None = None) -> None:
        super().__init__(tools, call_ids)
        # The output's first `{` may open a bare call: start inside the region.
        self._enter_region("")
        self._in_region = True
        self._state = _OUTPUT_START

    def _step(self, buf: str, final: bool) -> int:
        if self._state != _OUTPUT_START:
            return super()._step(buf, final)
        i = WHITESPACE(buf).end()
        self._text(buf[:i])  # whitespace decides nothing: no need to hold it
        if i < len(buf) and buf[i] == "{":
            self._reader = JsonCallReader(self)
            self._state = OBJECT
            self._bare = True
        elif i < len(buf) or final:
            self._exit_region()  # not bare JSON; the scan for `<|python_tag|>` goes on
        return i

    def _enter_region(self, marker: str) -> None:
        super()._enter_region(marker)
        self._bare = False  # after `<|python_tag|>`: the model said it is calling

    def _accepts_call_name(self, name: str) -> bool:
        # Bare JSON opening an answer may just be a JSON answer (`{"name": "Alice"}`):
        # only a declared tool makes it a call.
        return not self._bare or self.tools is None or name in self.tools

    @property
    def in_call_region(self) -> bool:
        return self._state != _OUTPUT_START and super().in_call_region

    def release_held(self) -> list[ParseEvent]:
        if self._in_region and self._state == _OUTPUT_START:
            # Nothing is held yet: the first text after reasoning still opens the output.
            return []
        return super().release_held()
