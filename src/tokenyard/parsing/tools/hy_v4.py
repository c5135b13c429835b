"""Tencent Hunyuan HY4 (`hy_v4`): HY3's shape (hy_v3.py) without `<tool_sep>`:
the name runs up to the first `<arg_key>`, and calls follow each other with
nothing between them:

    <tool_calls:opensource><tool_call:opensource>get_weather<arg_key:opensource>city</arg_key:opensource><arg_value:opensource>Tokyo</arg_value:opensource></tool_call:opensource></tool_calls:opensource>
"""

from __future__ import annotations

from .glm45 import KeyValueToolParser
from .hy_v3 import HUNYUAN_SUFFIXES, hunyuan_syntax


class HyV4ToolParser(KeyValueToolParser):
    name = "hy_v4"
    syntaxes = tuple(hunyuan_syntax(suffix, tool_sep=False) for suffix in HUNYUAN_SUFFIXES)
    reasoning_exit_markers = tuple(s.section[0] for s in syntaxes)
