"""Llama 3.x JSON tool calls, after `<|python_tag|>` or as bare JSON opening the
output; several calls are separated by `;` or a newline and run to the end of output:

    <|python_tag|>{"name": "get_weather", "parameters": {"city": "Tokyo", "days": 3}}; {"name": ...}
    {"name": "get_weather", "parameters": {"city": "Tokyo", "days": 3}}
"""

from __future__ import annotations

from .base import JsonCallReader
from .json_call_list import OBJECT, OUTPUT_START, WHITESPACE, OpeningCallListParser


class Llama3JsonToolParser(OpeningCallListParser):
    name = "llama3_json"
    aliases = ("llama4_json",)
    start_markers = ("<|python_tag|>",)
    bracketed = False
    separator = ";"
    newline_separates = True

    def _step(self, buf: str, final: bool) -> int:
        if self._state != OUTPUT_START:
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
