"""Phi-4-mini: a JSON array after the word `functools`, no closing tag:

functools[{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}, ...]
"""

from __future__ import annotations

from .json_call_list import JsonCallListParser


class Phi4ToolParser(JsonCallListParser):
    name = "phi4"
    aliases = ("phi4_mini_json",)
    start_markers = ("functools",)
    # Thinking about Python's functools must not end the reasoning.
    reasoning_exit_markers = ("functools[",)
