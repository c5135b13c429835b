"""Sber GigaChat 3 / 3.1 (`gigachat3`): one JSON call that runs to the end of the
output, in the `function call` role after the assistant's text (GigaChat 3) or
after a `<|function_call|>` token (GigaChat 3.1):

    <|message_sep|>

    function call<|role_sep|>
    {"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}

    <|function_call|>{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}

The `<|message_sep|>` that ends a message (the text's, the call's) is syntax.
GigaChat 3.5 writes DSML-style GCML blocks instead (its row in formats.py).
"""

from __future__ import annotations

from .json_call_list import MARKER, JsonCallListParser

_ROLE = "function call<|role_sep|>\n"
_END = "<|message_sep|>"


class GigaChat3ToolParser(JsonCallListParser):
    name = "gigachat3"
    start_markers = (_ROLE, _END + "\n\n" + _ROLE, "<|function_call|>", _END)
    reasoning_exit_markers = (_ROLE, "<|function_call|>")
    bracketed = False
    # The role message's end, right after the call.
    close_tag = _END

    def _step(self, buf: str, final: bool) -> int:
        if self._state == MARKER and self._start_marker == _END:
            # The end of the assistant's message with no call after it: syntax.
            self._marker(_END)
            self._exit_region()
            return len(_END)
        return super()._step(buf, final)
