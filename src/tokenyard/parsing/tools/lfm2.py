"""Liquid AI LFM2 / LFM2.5: a pythonic call list between special tokens,

    <|tool_call_start|>[get_weather(city='Tokyo', days=3)]<|tool_call_end|>

Strings single-quoted, mappings as JSON (`true`/`null` inside them), other values
as Python writes them (`True`, `None`); several calls share one list. A list item
may also be a JSON call object (`[{"name": ..., "arguments": {...}}]`), which LFM2
writes when asked for JSON, or a single such object with no list around it
(`<|tool_call_start|>{...}<|tool_call_end|>`). Only the start token begins a call: a bare `[` is prose."""

from __future__ import annotations

from .pythonic import PythonicToolParser

_START = "<|tool_call_start|>"
_END = "<|tool_call_end|>"


class Lfm2ToolParser(PythonicToolParser):
    name = "lfm2"
    aliases = ()
    wrapper_open = _START
    wrapper_close = _END
    json_items = True
    start_markers = (_START,)
    reasoning_exit_markers = (_START,)
