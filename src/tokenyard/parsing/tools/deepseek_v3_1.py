"""DeepSeek-V3.1 tool calls:

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city":"Tokyo","days":3}<｜tool▁call▁end｜><｜tool▁calls▁end｜>

The bars are full-width (U+FF5C) and `▁` is U+2581. A section holds one or more
calls, back to back or separated by whitespace (`TokenSectionToolParser`).
"""

from __future__ import annotations

from .base import is_function_name
from .deepseek_v3 import END_OF_SENTENCE
from .token_section import TokenSectionToolParser


class DeepSeekV31ToolParser(TokenSectionToolParser):
    name = "deepseek_v3_1"
    aliases = ("deepseek_v31",)
    section_begins = ("<｜tool▁calls▁begin｜>",)
    section_ends = ("<｜tool▁calls▁end｜>",)
    call_begin = "<｜tool▁call▁begin｜>"
    call_end = "<｜tool▁call▁end｜>"
    header_end = "<｜tool▁sep｜>"
    stray_markers = (END_OF_SENTENCE,)

    def _call_name(self, header: str) -> tuple[str, str | None] | None:
        name = header.strip()
        return (name, None) if is_function_name(name) else None
