"""Sber GigaChat 3.5: DSML's `invoke`/`parameter` shape (invoke_xml.py) spelled
with a `｜GCML｜` token:

    <｜GCML｜tool_calls>
    <｜GCML｜invoke name="get_weather">
    <｜GCML｜parameter name="city" string="true">Tokyo</｜GCML｜parameter>
    <｜GCML｜parameter name="days" string="false">3</｜GCML｜parameter>
    </｜GCML｜invoke>
    </｜GCML｜tool_calls>
"""

from __future__ import annotations

from .invoke_xml import InvokeSyntax, InvokeToolParser

_GCML = InvokeSyntax(
    "｜GCML｜tool_calls", "｜GCML｜invoke", "｜GCML｜parameter", strip_newline=False, bare_invoke_starts_call=False
)


class GigaChat35ToolParser(InvokeToolParser):
    name = "gigachat35"
    syntax = _GCML
    start_markers = _GCML.start_markers
