"""OpenBMB MiniCPM 5: XML calls with no outer block,

    <function name="get_weather"><param name="city">Tokyo</param><param name="days">3</param></function>

A value holding `<`, `&` or a newline is wrapped in `<![CDATA[...]]>` (the wrapper
is syntax, its inside the value verbatim); other values are written as Python's
`str()` does (`True`, `{'a': 1}`) and typed by the tool's schema. Several calls
follow one another. The shape is `InvokeToolParser`'s (invoke_xml.py) without the
block."""

from __future__ import annotations

from ...conversation import ToolSpec
from .base import ToolParser
from .invoke_xml import InvokeSyntax, InvokeToolParser
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


class _CdataArguments(ArgumentsBuilder):
    """Arguments whose values may be CDATA sections: the wrapper is dropped as the
    value streams (its opening is held until decided, a possible closing until the
    value ends)."""

    def __init__(self, owner: ToolParser, tool: ToolSpec | None):
        super().__init__(owner, tool)
        self._cdata: bool | None = None
        self._lead = ""
        self._trail = ""

    def begin(self, name: str, string_hint: bool | None = None) -> None:
        super().begin(name, string_hint)
        self._cdata, self._lead, self._trail = None, "", ""

    def text(self, chunk: str) -> None:
        if self._cdata is None:
            self._lead += chunk
            if len(self._lead) < len(_CDATA_OPEN) and _CDATA_OPEN.startswith(self._lead):
                return
            self._cdata = self._lead.startswith(_CDATA_OPEN)
            chunk = self._lead[len(_CDATA_OPEN) :] if self._cdata else self._lead
            self._lead = ""
        if self._cdata:
            if self._trail:
                chunk, self._trail = self._trail + chunk, ""
            if chunk[-1:] in ("]", ">"):  # the closing `]]>` may be arriving: hold it
                keep = (
                    3 if chunk.endswith(_CDATA_CLOSE) else 2 if chunk.endswith("]]") else (1 if chunk[-1] == "]" else 0)
                )
                if keep:
                    chunk, self._trail = chunk[:-keep], chunk[-keep:]
        super().text(chunk)

    def end(self) -> None:
        if self._cdata is None:
            super().text(self._lead)
        elif self._trail != _CDATA_CLOSE:
            super().text(self._trail)
        super().end()


class MiniCPM5ToolParser(InvokeToolParser):
    name = "minicpm5"
    aliases = ()
    syntax = _SYNTAX
    start_markers = (_SYNTAX.invoke_open,)

    def _new_arguments(self, name: str) -> ArgumentsBuilder:
        return _CdataArguments(self, self._tool(name))
