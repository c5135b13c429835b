"""Spark 2.5: GLM-4.7's call grammar,

    <tool_call>get_weather<arg_key>city</arg_key><arg_value>Tokyo</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>

(non-string values as JSON) inside DeepSeek-style turn framing
(`<｜start▁of▁sentence｜><|Bot|>`); its template opens `<think>` unless thinking is off
(reasoning parser `spark25`). A name of its own because SGLang gives it one."""

from __future__ import annotations

from .glm45 import Glm45ToolParser


class Spark25ToolParser(Glm45ToolParser):
    name = "spark25"
    decode_untyped = False  # SGLang's Spark 2.5 tests keep untyped values as text
