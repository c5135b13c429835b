"""IBM Granite 3.x: a JSON list of calls after a marker, no closing tag,

    <|tool_call|>[{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}]

`<|tool_call|>` is Granite 3.0's special token; Granite 3.1+ writes the plain-text
`<tool_call>`. (Granite 4 writes hermes blocks: granite4.py.)
"""

from __future__ import annotations

from .json_call_list import JsonCallListParser


class GraniteToolParser(JsonCallListParser):
    name = "granite"
    start_markers = ("<|tool_call|>", "<tool_call>")
