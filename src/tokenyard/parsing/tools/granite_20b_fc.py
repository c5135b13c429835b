"""IBM granite-20b-functioncalling: each call its own JSON object after a
`<function_call>` marker, no closing tag, calls back to back:

    <function_call> {"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}
"""

from __future__ import annotations

from .json_call_list import JsonCallListParser


class Granite20bFCToolParser(JsonCallListParser):
    name = "granite_20b_fc"
    start_markers = ("<function_call>",)
    bracketed = False
