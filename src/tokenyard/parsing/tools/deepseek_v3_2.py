"""DeepSeek V3.2 DSML tool calls (`｜` is the full-width bar U+FF5C):

    <｜DSML｜function_calls>
    <｜DSML｜invoke name="get_weather">
    <｜DSML｜parameter name="city" string="true">Tokyo</｜DSML｜parameter>
    <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

The shape is parsed by `InvokeToolParser` (invoke_xml.py); V4 (deepseek_v4.py)
differs only in the outer block's name. Outside a call, a tag that begins with the
DSML token but is none of the format's (a damaged opener, the other version's
block) is a marker up to its `>` or line end, never content.
"""

from __future__ import annotations

from .deepseek_v3 import END_OF_SENTENCE
from .invoke_xml import InvokeToolParser, dsml_syntax

_V3_2 = dsml_syntax("function_calls")


class DeepSeekV32ToolParser(InvokeToolParser):
    name = "deepseek_v3_2"
    aliases = ("deepseek_v32",)
    syntax = _V3_2
    start_markers = _V3_2.start_markers
    stray_markers = ("<｜DSML｜", "</｜DSML｜", END_OF_SENTENCE)
    quote_aware = True
