"""PFN PLaMo 3: JSON calls framed by PLaMo's special tokens,

    <|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>
    <|plamo:begin_tool_name:plamo|>get_weather<|plamo:end_tool_name:plamo|>
    <|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{"city": "Tokyo", "days": 3}
    <|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>

(one line here, none on the wire). The section shape is `TokenSectionToolParser`'s:
the name tokens are the call header, the arguments opener (with its JSON
constraint tokens) ends it, and the arguments closer with the request closer
ends the call."""

from __future__ import annotations

from .base import is_function_name
from .token_section import TokenSectionToolParser

_NAME_OPEN = "<|plamo:begin_tool_name:plamo|>"
_NAME_CLOSE = "<|plamo:end_tool_name:plamo|>"


class Plamo3ToolParser(TokenSectionToolParser):
    name = "plamo3"
    section_begins = ("<|plamo:begin_tool_requests:plamo|>",)
    section_ends = ("<|plamo:end_tool_requests:plamo|>",)
    call_begin = "<|plamo:begin_tool_request:plamo|>"
    call_end = "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
    header_end = "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"

    def _call_name(self, header: str) -> tuple[str, str | None] | None:
        header = header.strip()
        if not (header.startswith(_NAME_OPEN) and header.endswith(_NAME_CLOSE)):
            return None
        name = header[len(_NAME_OPEN) : -len(_NAME_CLOSE)].strip()
        return (name, None) if is_function_name(name) else None
