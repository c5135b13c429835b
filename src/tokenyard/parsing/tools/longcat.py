"""Meituan LongCat-Flash: hermes-style JSON calls under tags of its own,

    <longcat_tool_call>
    {"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}
    </longcat_tool_call>

one call per tag pair, several back to back."""

from __future__ import annotations

from .hermes import HermesToolParser


class LongcatToolParser(HermesToolParser):
    name = "longcat"
    aliases = ()
    start_markers = ("<longcat_tool_call>",)
    close_tag = "</longcat_tool_call>"
