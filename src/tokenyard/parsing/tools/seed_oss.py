"""ByteDance Seed-OSS: Qwen3-Coder's call grammar inside its own section tags.

    <seed:tool_call>
    <function=get_weather>
    <parameter=city>Tokyo</parameter>
    <parameter=days>3</parameter>
    </function>
    </seed:tool_call>

Its template writes parameter values without the newlines Qwen3-Coder puts inside
the tags (one is still dropped where a model writes them), and non-string values
with Python's `str()` (`True`, `{'a': 1}`), which schema coercion reads.
"""

from __future__ import annotations

from typing import ClassVar

from .qwen3_coder import Qwen3CoderToolParser


class SeedOssToolParser(Qwen3CoderToolParser):
    name = "seed_oss"
    aliases: ClassVar[tuple[str, ...]] = ()
    section_open = "<seed:tool_call>"
    section_close = "</seed:tool_call>"
    start_markers = (section_open, "<function=")
    reasoning_exit_markers = (section_open,)
