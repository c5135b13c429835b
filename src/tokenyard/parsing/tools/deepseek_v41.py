"""DeepSeek V4.1 DSML tool calls: V4's shape (deepseek_v4.py) spelled with a space
after the `｜DSML｜` token and the outer block named `calls`:

    <｜DSML｜ calls>
    <｜DSML｜ invoke name="get_weather">
    <｜DSML｜ parameter name="city" string="true">Tokyo</｜DSML｜ parameter>
    <｜DSML｜ parameter name="days" string="false">3</｜DSML｜ parameter>
    </｜DSML｜ invoke>
    </｜DSML｜ calls>
"""

from __future__ import annotations

from .deepseek_v3 import END_OF_SENTENCE
from .invoke_xml import InvokeSyntax, InvokeToolParser

_V41 = InvokeSyntax(
    "｜DSML｜ calls", "｜DSML｜ invoke", "｜DSML｜ parameter", strip_newline=False, bare_invoke_starts_call=True
)


class DeepSeekV41ToolParser(InvokeToolParser):
    name = "deepseek_v41"
    syntax = _V41
    start_markers = _V41.start_markers
    stray_markers = (END_OF_SENTENCE,)
