"""AI21 Jamba, and ServiceNow Apriel 1.5/1.6 (their templates write the same list,
Apriel's objects with an `"id"` after the arguments, which is read and left out):

<tool_calls>[{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}, ...]</tool_calls>

Apriel's reasoning (`Here are my reasoning steps:` ... `[BEGIN FINAL RESPONSE]`) is
the `apriel` reasoning format.
"""

from __future__ import annotations

from .json_call_list import JsonCallListParser


class JambaToolParser(JsonCallListParser):
    name = "jamba"
    aliases = ("apriel",)
    start_markers = ("<tool_calls>",)
    close_tag = "</tool_calls>"
