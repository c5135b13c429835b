"""Tencent Hunyuan-A13B: a JSON list of calls in a `<tool_calls>` section, after
its `<answer>` opens (reasoning format `hunyuan_a13b`):

    <tool_calls>[{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}]</tool_calls>
"""

from __future__ import annotations

from .json_call_list import JsonCallListParser


class HunyuanA13BToolParser(JsonCallListParser):
    name = "hunyuan_a13b"
    start_markers = ("<tool_calls>",)
    close_tag = "</tool_calls>"
