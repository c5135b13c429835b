"""The common JSON call shapes, for a model whose format is not named: Dynamo's
`default` tool parser (its fallback when no parser is chosen) reads exactly these,

    {"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}
    [{"name": "get_weather", "parameters": {...}}, {"name": ...}]
    Checking. <TOOLCALL>[{"name": "get_weather", "arguments": {...}}]</TOOLCALL>
    Checking. <|python_tag|>{"name": "get_weather", "parameters": {...}}

A bare object or list is a call only where it opens the output and names a
declared tool (a JSON answer stays the answer); after a marker the model said it
is calling. `arguments` and `parameters` both hold the arguments.
"""

from __future__ import annotations

from typing import ClassVar

from ..markers import MarkerSet
from .json_call_list import LIST_OPEN, OUTPUT_START, WHITESPACE, OpeningCallListParser

# Each start's closing tag ("": the list or object ends the section); "" is the
# output's own start.
_CLOSE_TAGS = {"": "", "<TOOLCALL>": "</TOOLCALL>", "<|python_tag|>": ""}


class GenericJsonToolParser(OpeningCallListParser):
    name = "generic_json"
    aliases: ClassVar[tuple[str, ...]] = ()
    start_markers = ("<TOOLCALL>", "<|python_tag|>")

    def _enter_region(self, marker: str) -> None:
        super()._enter_region(marker)
        self.close_tag = _CLOSE_TAGS[marker]
        self._skip_to = MarkerSet([self.close_tag]) if self.close_tag else self._starts

    def _step(self, buf: str, final: bool) -> int:
        if self._state != OUTPUT_START:
            return super()._step(buf, final)
        i = WHITESPACE(buf).end()
        self._text(buf[:i])  # whitespace decides nothing: no need to hold it
        if i < len(buf) and buf[i] in "{[":
            self._state = LIST_OPEN  # an object (a single call) or a list of calls
            self._bare = True
        elif i < len(buf) or final:
            self._exit_region()  # not bare JSON; the scan for the markers goes on
        return i
