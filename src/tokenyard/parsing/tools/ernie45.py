"""Baidu ERNIE 4.5: hermes-style JSON calls after the reasoning,

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}
    </tool_call>

A name of its own because vLLM gives it one; its reasoning (`ernie45`) ends at
`</think>`, and a text answer may come wrapped in `<response>` … `</response>`."""

from __future__ import annotations

from typing import ClassVar

from .hermes import HermesToolParser


class Ernie45ToolParser(HermesToolParser):
    name = "ernie45"
    aliases: ClassVar[tuple[str, ...]] = ()
