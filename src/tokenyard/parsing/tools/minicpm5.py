"""OpenBMB MiniCPM 5: XML calls with no outer block,

    <function name="get_weather"><param name="city">Tokyo</param><param name="days">3</param></function>

A value holding `<`, `&` or a newline is wrapped in `<![CDATA[...]]>`: the wrapper
is syntax, its inside the value verbatim, `</param>` included (only `]]>` ends
it). Other values are written as Python's `str()` does (`True`, `{'a': 1}`) and
typed by the tool's schema. Several calls follow one another. The shape is
`InvokeToolParser`'s (invoke_xml.py) without the block."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from ...conversation import ToolSpec
from .base import ToolParser
from .invoke_xml import VALUE, InvokeSyntax, InvokeToolParser
from .xml_args import ArgumentsBuilder

_SYNTAX = InvokeSyntax(
    # No block: this tag never occurs, calls start at the bare `<function name=`.
    "minicpm5:no_block",
    "function",
    "param",
    strip_newline=False,
    bare_invoke_starts_call=True,
)
_CDATA_OPEN = "<![CDATA["
_CDATA_CLOSE = "]]>"


class _ValueArguments(ArgumentsBuilder):
    """Arguments that also remember whether the current value is a CDATA section
    (None: not known yet) and whether that section has closed."""

    def __init__(self, owner: ToolParser, tool: ToolSpec | None):
        super().__init__(owner, tool)
        self.cdata: bool | None = None
        self.cdata_closed = False

    def begin(self, name: str, string_hint: bool | None = None) -> None:
        super().begin(name, string_hint)
        self.cdata, self.cdata_closed = None, False


class MiniCPM5ToolParser(InvokeToolParser):
    name = "minicpm5"
    aliases = ()
    syntax = _SYNTAX
    start_markers = (_SYNTAX.invoke_open,)

    def _new_arguments(self, name: str) -> ArgumentsBuilder:
        return _ValueArguments(self, self._tool(name))

    def _value(self, buf: str, pos: int, final: bool) -> int:
        arguments = self._arguments
        assert isinstance(arguments, _ValueArguments)
        if arguments.cdata is None:
            ahead = buf[pos : pos + len(_CDATA_OPEN)]
            if len(ahead) < len(_CDATA_OPEN) and _CDATA_OPEN.startswith(ahead) and not final:
                return -1  # may still become a CDATA section
            arguments.cdata = ahead == _CDATA_OPEN
            if arguments.cdata:
                self._raw(_CDATA_OPEN)
                return pos + len(_CDATA_OPEN)
        if arguments.cdata and not arguments.cdata_closed:
            end = buf.find(_CDATA_CLOSE, pos)
            if end >= 0:
                arguments.text(buf[pos:end])
                self._raw(buf[pos : end + len(_CDATA_CLOSE)])
                arguments.cdata_closed = True
                return end + len(_CDATA_CLOSE)
            stop = len(buf)
            if not final:  # hold what may be the start of `]]>`
                stop -= 2 if buf.endswith("]]") else 1 if buf.endswith("]") else 0
            arguments.text(buf[pos:stop])
            self._raw(buf[pos:stop])
            if final:
                self._fail_call("truncated")
                self._exit_region()
                return len(buf)
            return stop if stop > pos else -1
        return super()._value(buf, pos, final)

    _steps: ClassVar[dict[int, Callable[..., int]]] = {**InvokeToolParser._steps, VALUE: _value}
