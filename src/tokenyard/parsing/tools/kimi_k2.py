"""Kimi-K2 tool calls:

    <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city":"Tokyo","days":3}<|tool_call_end|><|tool_calls_section_end|>

The section tokens also come singular (`<|tool_call_section_begin|>`). The header
`functions.get_weather:0` is the model's own call id: it is kept as the call's id
(it round-trips into the next prompt), and the function name is the part between
`functions.` and `:N`. The section shape is shared with deepseek_v3_1
(`TokenSectionToolParser`).
"""

from __future__ import annotations

import re

from .base import is_function_name
from .deepseek_v3_1 import TokenSectionToolParser

_CALL_ID = re.compile(r"(?:functions\.)?(.+?)(?::\d+)?").fullmatch


class KimiK2ToolParser(TokenSectionToolParser):
    name = "kimi_k2"
    section_begins = ("<|tool_calls_section_begin|>", "<|tool_call_section_begin|>")
    section_ends = ("<|tool_calls_section_end|>", "<|tool_call_section_end|>")
    call_begin = "<|tool_call_begin|>"
    call_end = "<|tool_call_end|>"
    header_end = "<|tool_call_argument_begin|>"

    def _call_name(self, header: str) -> tuple[str, str | None] | None:
        call_id = header.strip()
        match = _CALL_ID(call_id)
        if match is None or not is_function_name(match.group(1)):
            return None
        return match.group(1), call_id
