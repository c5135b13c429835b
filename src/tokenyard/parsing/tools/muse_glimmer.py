"""Muse Glimmer: ATEM calls in the tool channel of its channel-scoped messages,

    <|start|>assistant to=self<|message|>...reasoning...<|eom|>
    <|start|>assistant to=get_weather<|message|><atem:function_calls>
    <atem:invoke name="get_weather">
    <atem:parameter name="city">Tokyo</atem:parameter>
    </atem:invoke>
    </atem:function_calls><|eom|>
    <|start|>assistant to=user<|message|>...answer...<|eot|>

(the generation prompt ends with `<|start|>assistant`, so output starts at ` to=`).
A call is an ATEM block right after a tool channel's header; the same markup
quoted in the answer or in reasoning is their text. The reasoning format
`muse_glimmer` owns the `to=self` and `to=user` channels and the framing tokens."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

from .invoke_xml import HEAD, InvokeSyntax, InvokeToolParser
from .xml_args import ArgumentsBuilder

_SYNTAX = InvokeSyntax(
    "atem:function_calls",
    "atem:invoke",
    "atem:parameter",
    strip_newline=False,
    bare_invoke_starts_call=False,
)
_CHANNEL = "to="
# A tool channel's header: the recipient, then the message token.
_HEADER = re.compile(r"to=[^\s<]{1,256}<\|message\|>\s*")
# What may still grow into a header.
_PARTIAL_HEADER = re.compile(r"to=[^\s<]{0,256}(?:<(?:\|(?:m(?:e(?:s(?:s(?:a(?:g(?:e(?:\|)?)?)?)?)?)?)?)?)?)?")
_HEADER_STATE = 100


class MuseGlimmerToolParser(InvokeToolParser):
    name = "muse_glimmer"
    aliases = ("muse",)
    syntax = _SYNTAX
    start_markers = (_CHANNEL,)
    # Inside the reasoning channel, `to=` and ATEM markup are its text.
    reasoning_exit_markers = ()

    def _new_arguments(self, name: str) -> ArgumentsBuilder:
        # The checkpoint's response schema allows non-JSON values: a value the tool's
        # schema does not type is read as JSON where it is JSON (`42`, `null`), else text.
        return ArgumentsBuilder(self, self._tool(name), strip_newline=self.syntax.strip_newline, decode_untyped=True)

    def _enter_region(self, marker: str) -> None:
        super()._enter_region(marker)
        self._state = _HEADER_STATE

    def _declared_name(self, name: str) -> str:
        """The template lists a tool without a namespace under a namespace of its own
        name, so the model may call `get_weather` as `get_weather.get_weather`: that
        exact doubling of a declared name (and only it) is the declared tool."""
        space, dot, leaf = name.partition(".")
        if dot and space == leaf and self.tools is not None and name not in self.tools and leaf in self.tools:
            return leaf
        return name

    def _header(self, buf: str, pos: int, final: bool) -> int:
        """`to=RECIPIENT<|message|>` then the ATEM block, or text."""
        match = _HEADER.match(buf, pos)
        block = _SYNTAX.block_open
        if match is not None:
            after = match.end()
            ahead = buf[after : after + len(block)]
            if ahead == block:
                self._marker(buf[pos:after])
                self._in_block = True
                self._state = HEAD
                return after
            if not final and (after == len(buf) or block.startswith(ahead)):
                return -1
        elif not final and _PARTIAL_HEADER.fullmatch(buf, pos):
            return -1  # the header may still be arriving
        self._text(_CHANNEL)
        self._exit_region()
        return pos + len(_CHANNEL)

    _steps: ClassVar[dict[int, Callable[..., int]]] = {**InvokeToolParser._steps, _HEADER_STATE: _header}
