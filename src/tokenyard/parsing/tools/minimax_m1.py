"""MiniMax-M1 (vLLM's `minimax`): one JSON call object per line between
`<tool_calls>` and `</tool_calls>`, after a `<think>` block (the model's
function-call guide):

    <tool_calls>
    {"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_calls>

A line that is no call object once the section has made a call is text, and the
calls on the lines after it still count: each line is its own item.
"""

from __future__ import annotations

from ..markers import MarkerSet
from .base import JsonCallReader, split_before
from .json_call_list import AFTER_ITEM, FIRST_SUBCLASS_STATE, JsonCallListConfig, JsonCallListParser

_REST_OF_LINE = FIRST_SUBCLASS_STATE


class MinimaxM1ToolParser(JsonCallListParser):
    name = "minimax_m1"
    aliases = ("minimax",)
    # Calls are separated by newlines only (no comma, no list).
    config = JsonCallListConfig(
        start_markers=("<tool_calls>",),
        close_tag="</tool_calls>",
        bracketed=False,
        separator="",
        newline_separates=True,
    )
    _line_end = MarkerSet(["\n", config.close_tag])

    def _no_call(self, reader: JsonCallReader) -> None:
        if not self._any_call:  # no call yet: not a call section
            super()._no_call(reader)
            return
        self._text(self._pending + "".join(reader.pre_raw))
        self._pending = ""
        self._state = _REST_OF_LINE

    def _step(self, buf: str, final: bool) -> int:
        if self._state != _REST_OF_LINE:
            return super()._step(buf, final)
        end, match = split_before(buf, self._line_end, final)
        self._text(buf[:end])
        if match is not None or final:
            self._state = AFTER_ITEM  # the newline or closing tag is read there
        return end
