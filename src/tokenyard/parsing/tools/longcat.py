"""Meituan LongCat-Flash: hermes-style JSON calls under tags of its own,

    <longcat_tool_call>
    {"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}
    </longcat_tool_call>

one call per tag pair, several back to back."""

from __future__ import annotations

from ..markers import MarkerSet
from .hermes import HermesToolParser

_OPEN = "<longcat_tool_call>"
_CLOSE = "</longcat_tool_call>"


class LongcatToolParser(HermesToolParser):
    name = "longcat"
    aliases = ()
    call_open = _OPEN
    call_close = _CLOSE
    start_markers = (_OPEN,)
    _close_set = MarkerSet([_CLOSE])
