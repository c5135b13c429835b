"""DeepSeek V4 DSML tool calls: V3.2's shape (deepseek_v3_2.py) with the outer
block named `tool_calls`:

    <｜DSML｜tool_calls>
    <｜DSML｜invoke name="get_weather">
    <｜DSML｜parameter name="city" string="true">Tokyo</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜tool_calls>

V4's reasoning ends right at `<｜DSML｜invoke name=` (REFERENCE §1), so a bare
invoke with no outer block also starts a call.
"""

from __future__ import annotations

from .deepseek_v3 import END_OF_SENTENCE
from .invoke_xml import InvokeToolParser, dsml_syntax

_V4 = dsml_syntax("tool_calls")


class DeepSeekV4ToolParser(InvokeToolParser):
    name = "deepseek_v4"
    syntax = _V4
    start_markers = _V4.start_markers
    stray_markers = ("<｜DSML｜", "</｜DSML｜", END_OF_SENTENCE)
    quote_aware = True
