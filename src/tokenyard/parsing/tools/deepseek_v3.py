"""DeepSeek-V3 / R1 tool calls: a typed header, then the arguments in a JSON fence:

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
    ```json
    {"city":"Tokyo","days":3}
    ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>

The bars are full-width (U+FF5C) and `▁` is U+2581; the section shape is shared
with deepseek_v3_1 (`TokenSectionToolParser`).
"""

from __future__ import annotations

from .base import is_function_name
from .token_section import TokenSectionToolParser

_SEP = "<｜tool▁sep｜>"
# DeepSeek's end-of-sentence token: the engine stops on it, so it reaches the parser
# only when handed a whole output; it is a control token there, never text.
END_OF_SENTENCE = "<｜end▁of▁sentence｜>"


class DeepSeekV3ToolParser(TokenSectionToolParser):
    name = "deepseek_v3"
    section_begins = ("<｜tool▁calls▁begin｜>",)
    section_ends = ("<｜tool▁calls▁end｜>",)
    call_begin = "<｜tool▁call▁begin｜>"
    call_end = "<｜tool▁call▁end｜>"
    # The header is `function<｜tool▁sep｜>NAME`, ended by the newline before the fence.
    header_end = "\n"
    fenced = True
    stray_markers = (END_OF_SENTENCE,)

    def _call_name(self, header: str) -> tuple[str, str | None] | None:
        kind, sep, name = header.partition(_SEP)
        name = (name if sep else kind).strip()
        return (name, None) if is_function_name(name) else None
