"""Upstage Solar Open 2 (vLLM's `solar_open2`): the `<call>NAME<key>K</key><value>V</value></call>`
shape of glm45.py spelled in special tokens, the key's closer opening the value:

    <|tool_call:start|>get_weather
    <|tool_arg:start|>city<|tool_arg:value|>Tokyo<|tool_arg:end|>
    <|tool_arg:start|>days<|tool_arg:value|>3<|tool_arg:end|>
    <|tool_call:end|>

The name is the rest of the start token's line. Values are raw text typed by the
tool's schema (a string where nothing declares the parameter). A value ends at its
own `<|tool_arg:end|>`: the other tokens inside it are its text. Known failure
shapes handled: a dropped `<|tool_call:end|>` or `<|tool_arg:end|>`, read where the
next token shows it (glm45.py's `special_tokens`), and a key begun again. A key
given twice keeps its first value. The format's tokens met outside a call are
markers, never content.
"""

from __future__ import annotations

from typing import ClassVar

from .glm45 import KeyValueSyntax, KeyValueToolParser

CALL_START = "<|tool_call:start|>"
CALL_END = "<|tool_call:end|>"
ARG_START = "<|tool_arg:start|>"
ARG_VALUE = "<|tool_arg:value|>"
ARG_END = "<|tool_arg:end|>"

SOLAR = KeyValueSyntax((CALL_START, CALL_END), (ARG_START, ARG_VALUE), (None, ARG_END), special_tokens=True)


class SolarOpen2ToolParser(KeyValueToolParser):
    name = "solar_open2"
    aliases: ClassVar[tuple[str, ...]] = ()
    syntaxes = (SOLAR,)
    stray_markers = (CALL_END, ARG_START, ARG_VALUE, ARG_END)
    first_value_wins = True
