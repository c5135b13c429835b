"""Kimi-K2 tool calls:

    <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city":"Tokyo","days":3}<|tool_call_end|><|tool_calls_section_end|>

The section tokens also come singular (`<|tool_call_section_begin|>`). The header
`functions.get_weather:0` is the model's own call id: it is kept as the call's id
(it round-trips into the next prompt), and the function name is the part between
`functions.` and `:N`. The section shape is shared with deepseek_v3_1
(`TokenSectionToolParser`).

Some checkpoints write a bare counter (`0`) as the header. The function is then
the only tool offered, or the one tool whose parameters hold every argument key
the call passes (read once the arguments are complete); a call that names no
tool that way is syntax with no destination, reported as a marker so no special
token reaches content. So is a section end, call end or argument token met in text
outside any call.
"""

from __future__ import annotations

import json
import re

from .base import is_function_name
from .token_section import BETWEEN, TokenSectionToolParser, skip_whitespace

_CALL_ID = re.compile(r"(?:functions\.)?(.+?)(:\d+)?").fullmatch


class KimiK2ToolParser(TokenSectionToolParser):
    name = "kimi_k2"
    section_begins = ("<|tool_calls_section_begin|>", "<|tool_call_section_begin|>")
    section_ends = ("<|tool_calls_section_end|>", "<|tool_call_section_end|>")
    call_begin = "<|tool_call_begin|>"
    call_end = "<|tool_call_end|>"
    header_end = "<|tool_call_argument_begin|>"
    stray_markers = (*section_ends, call_end, header_end)

    _inferred: str | None = None

    def _call_name(self, header: str) -> tuple[str, str | None] | None:
        call_id = header.strip()
        if call_id.isdigit():
            if self._inferred is not None:
                name, self._inferred = self._inferred, None
                return name, call_id
            if self.tools is not None and len(self.tools) == 1:
                return next(iter(self.tools)), call_id
            return None
        match = _CALL_ID(call_id)
        if match is None or not is_function_name(match.group(1)):
            return None
        if call_id.startswith("functions.") and match.group(2) is None:
            return None  # `functions.NAME` always ends in `:N`: without it the header is garbled
        return match.group(1), call_id

    def _read_header(self, buf: str, i: int, at: int, final: bool) -> int | None:
        start = skip_whitespace(buf, at + len(self.call_begin))
        header = self._header_stops.find(buf, start)
        if (
            header is not None
            and header.group() == self.header_end
            and buf[start : header.start()].strip().isdigit()
            and not (self.tools is not None and len(self.tools) == 1)
        ):
            end = self._args_stops.find(buf, header.end())
            if end is None and not final:
                return None  # the arguments name the tool: wait for all of them
            args_end = len(buf) if end is None else end.start()
            self._inferred = self._tool_taking(buf[header.end() : args_end])
            if self._inferred is None:
                stop = args_end if end is None or end.group() != self.call_end else end.end()
                self._marker(buf[i:stop])
                self._state = BETWEEN
                return stop
        return super()._read_header(buf, i, at, final)

    def _tool_taking(self, arguments: str) -> str | None:
        """The one offered tool whose parameters include every key of `arguments`."""
        try:
            value = json.loads(arguments)
        except ValueError:
            return None
        if not isinstance(value, dict) or self.tools is None:
            return None
        keys = set(value)
        fits = [
            name
            for name, spec in self.tools.items()
            if keys <= set((spec.parameters or {}).get("properties", {}) or {})
        ]
        return fits[0] if len(fits) == 1 else None
