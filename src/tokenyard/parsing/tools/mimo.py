"""Xiaomi MiMo (V2): Qwen3-Coder's call grammar written compactly,

    <tool_call>
    <function=get_weather>
    <parameter=city>Tokyo</parameter>
    <parameter=days>3</parameter>
    </function>
    </tool_call>

A string value is the text between the tags verbatim: no newline is dropped, as
MiMo writes none there (vLLM and SGLang read it the same way)."""

from __future__ import annotations

from .qwen3_coder import Qwen3CoderToolParser


class MiMoToolParser(Qwen3CoderToolParser):
    name = "mimo"
    aliases = ()
    strip_value_newline = False
