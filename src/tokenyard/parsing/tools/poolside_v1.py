"""Poolside Laguna: GLM-4's call grammar, with or without the newlines,

    <tool_call>get_weather<arg_key>city</arg_key><arg_value>Tokyo</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>

inside `<assistant>` turns (non-string values as JSON; a string value is the text
between its tags, whitespace included). The generation prompt ends with `<think>`
or `</think>` as thinking is on or off. A name of its own because vLLM and SGLang
give it one."""

from __future__ import annotations

from .glm45 import Glm45ToolParser


class PoolsideV1ToolParser(Glm45ToolParser):
    name = "poolside_v1"
