"""rednote dots (dots.llm): `invoke`/`parameter` elements, MiniMax-M2's shape
(invoke_xml.py), inside a `<dots_function_call>` block:

    <dots_function_call>
    <invoke name="get_weather">
    <parameter name="city">Tokyo</parameter>
    <parameter name="days">3</parameter>
    </invoke>
    </dots_function_call>

Values are untyped text, typed by the tool's schema; names may be quoted or bare. A
block may instead hold one `{"name": ..., "arguments": {...}}` object.
"""

from __future__ import annotations

from .invoke_xml import InvokeSyntax, InvokeToolParser

_DOTS = InvokeSyntax(
    "dots_function_call", "invoke", "parameter", strip_newline=False, bare_invoke_starts_call=False, block_json=True
)


class DotsToolParser(InvokeToolParser):
    name = "dots"
    syntax = _DOTS
    start_markers = _DOTS.start_markers
    # A closing tag with no block open is the format's syntax, never answer text.
    stray_markers = ("</dots_function_call>",)
