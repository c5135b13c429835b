"""Phi-4-mini and FireFunction v2 (fireworks-ai/llama-3-firefunction-v2, whose
template writes ` functools[` after the answer text): a JSON array after the word
`functools`, no closing tag:

functools[{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}, ...]

FireFunction's template replays each call's `arguments` string through `tojson`, so
its history holds arguments as a JSON string; such a string that serializes an
object is read as that object.
"""

from __future__ import annotations

from .json_call_list import JsonCallListParser


class Phi4ToolParser(JsonCallListParser):
    name = "phi4"
    aliases = ("phi4_mini_json", "firefunction_v2")
    start_markers = ("functools",)
    # Thinking about Python's functools must not end the reasoning.
    reasoning_exit_markers = ("functools[",)
