"""Nemotron (Llama-3.x-Nemotron "deci" models):

<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}, ...]</TOOLCALL>
"""

from __future__ import annotations

from .json_call_list import JsonCallListParser


class NemotronDeciToolParser(JsonCallListParser):
    name = "nemotron_deci"
    start_markers = ("<TOOLCALL>",)
    close_tag = "</TOOLCALL>"
