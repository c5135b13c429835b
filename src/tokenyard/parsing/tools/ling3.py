"""inclusionAI Ling 3 / Ring 3 (Bailing V3): GLM-4.5's call grammar, as its
template writes it,

    <tool_call>get_weather<arg_key>city</arg_key>
    <arg_value>Tokyo</arg_value><arg_key>days</arg_key>
    <arg_value>3</arg_value>
    </tool_call>

(non-string values as JSON). What differs is the turn framing (`<role>ASSISTANT</role>`)
and its reasoning: the generation prompt opens `<think>` (reasoning parser `ling3`)."""

from __future__ import annotations

from .glm45 import Glm45ToolParser


class Ling3ToolParser(Glm45ToolParser):
    name = "ling3"
