"""Ai2 OLMo 3: pythonic calls one per line inside `<function_calls>` tags,

    <function_calls>
    get_weather(city="Tokyo", days=3)
    get_time(zone="Asia/Tokyo")
    </function_calls>

Values are Python literals or JSON's `true`/`false`/`null`. The generation prompt
of the thinking models opens `<think>` (reasoning parser `olmo3`)."""

from __future__ import annotations

from .pythonic import PythonicToolParser

_OPEN = "<function_calls>"
_CLOSE = "</function_calls>"


class Olmo3ToolParser(PythonicToolParser):
    name = "olmo3"
    aliases = ()
    wrapper_open = _OPEN
    wrapper_close = _CLOSE
    bracketed = False
    start_markers = (_OPEN,)
    reasoning_exit_markers = (_OPEN,)
