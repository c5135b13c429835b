"""MiniMax M2 / M2.5:

    <minimax:tool_call>
    <invoke name="get_weather">
    <parameter name="city">Tokyo</parameter>
    <parameter name="days">3</parameter>
    </invoke>
    </minimax:tool_call>

One block holds one or more invokes. Parameter values are untyped text, typed by
the tool's schema; one newline right inside the parameter tags is dropped (the
model writes multi-line values as `<parameter name="x">\\n...\\n</parameter>`).
Names may be double-quoted, single-quoted or bare. The tags are plain text, so a
value may contain `<invoke name=` or `<parameter name=` (file contents); only a
closing tag ends it.
"""

from __future__ import annotations

from .invoke_xml import InvokeSyntax, InvokeToolParser

_SYNTAX = InvokeSyntax(
    "minimax:tool_call",
    "invoke",
    "parameter",
    strip_newline=True,
    # A bare `<invoke name=` is too common in prose about XML to start a call.
    bare_invoke_starts_call=False,
)


class MinimaxM2ToolParser(InvokeToolParser):
    name = "minimax_m2"
    syntax = _SYNTAX
    start_markers = _SYNTAX.start_markers
