"""Salesforce xLAM: a JSON list of calls, as the whole answer or after a marker,

    [{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}]
    Checking.[TOOL_CALLS][{"name": ...}]
    <tool_call>[{"name": ...}]</tool_call>
    ```json
    [{"name": ...}]
    ```

A bare `[` starts a call list only when a declared tool's name follows (prose
keeps its brackets); the markers' own closing tags are syntax."""

from __future__ import annotations

from typing import ClassVar

from ..markers import MarkerSet
from .json_call_list import _ITEM, LIST_OPEN, JsonCallListParser

_CLOSE_TAGS = {"[": "", "[TOOL_CALLS]": "", "<tool_call>": "</tool_call>", "```json": "```"}


class XlamToolParser(JsonCallListParser):
    name = "xlam"
    aliases: ClassVar[tuple[str, ...]] = ()
    start_markers = tuple(_CLOSE_TAGS)
    # In reasoning, brackets and code fences are prose.
    reasoning_exit_markers = ("[TOOL_CALLS]", "<tool_call>")

    def _enter_region(self, marker: str) -> None:
        super()._enter_region(marker)
        self.close_tag = _CLOSE_TAGS[marker]
        self._skip_to = MarkerSet([self.close_tag]) if self.close_tag else self._starts

    def _after_start_marker(self) -> int:
        # A bare `[` is the list's own bracket: items follow.
        return _ITEM if self._start_marker == "[" else LIST_OPEN

    def _accepts_call_name(self, name: str) -> bool:
        if self._start_marker != "[" or self._any_call or self.tools is None:
            return super()._accepts_call_name(name)
        return name in self.tools
