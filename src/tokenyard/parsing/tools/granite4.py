"""IBM Granite 4.0 / 4.1: hermes-style JSON calls,

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}
    </tool_call>

inside Granite's own turn framing (`<|start_of_role|>assistant<|end_of_role|>`).
A name of its own because vLLM gives it one."""

from __future__ import annotations

from typing import ClassVar

from .hermes import HermesToolParser


class Granite4ToolParser(HermesToolParser):
    name = "granite4"
    aliases: ClassVar[tuple[str, ...]] = ()
