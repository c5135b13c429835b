"""Upstage Solar Open 100B: calls framed by special tokens in a tool section, each
carrying the model's own call id (10 lowercase letters or digits) before the name:

    <|begin|>assistant<|tool_calls|><|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>get_weather<|tool_call:args|>{"city":"Tokyo","days":3}<|tool_call:end|><|calls|>

The section shape is `TokenSectionToolParser`'s; the id is kept as the call's id (the
template writes it back into the next prompt and pairs tool results by it).
Reasoning (`<|think|>` ... `<|end|>`) is the `solar_open` reasoning format.
"""

from __future__ import annotations

from .base import is_function_name
from .token_section import TokenSectionToolParser

_NAME = "<|tool_call:name|>"


class SolarOpenToolParser(TokenSectionToolParser):
    name = "solar_open"
    section_begins = ("<|begin|>assistant<|tool_calls|>", "<|tool_calls|>")
    section_ends = ("<|calls|>",)
    call_begin = "<|tool_call:begin|>"
    call_end = "<|tool_call:end|>"
    header_end = "<|tool_call:args|>"

    def _call_name(self, header: str) -> tuple[str, str | None] | None:
        call_id, found, name = header.partition(_NAME)
        if not found:  # the id and its separator left out: the header is the name
            call_id, name = "", call_id
        name = name.strip()
        if not is_function_name(name):
            return None
        return name, call_id.strip() or None
