"""AI21 Jamba:

<tool_calls>[{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}, ...]</tool_calls>
"""

from __future__ import annotations

from .json_call_list import JsonCallListParser


class JambaToolParser(JsonCallListParser):
    name = "jamba"
    start_markers = ("<tool_calls>",)
    close_tag = "</tool_calls>"
