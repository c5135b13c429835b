"""ByteDance Seed-OSS: Qwen3-Coder's call grammar inside its own section tags.

    <seed:tool_call>
    <function=get_weather>
    <parameter=city>Tokyo</parameter>
    <parameter=days>3</parameter>
    </function>
    </seed:tool_call>

Its template writes parameter values without the newlines Qwen3-Coder puts inside
the tags (where a model writes them anyway, the pair is dropped; a value's own
trailing newline is kept, as llama.cpp's tests expect), and non-string values
with Python's `str()` (`True`, `{'a': 1}`), which schema coercion reads. A
`<seed:tool_call>` inside unclosed thinking starts a call only at a line start.
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
    # Its template writes values inline: a value's own trailing newline is kept.
    paired_newlines = True
    # Seed-OSS writes out the call it means to make while it thinks ("The format is
    # <seed:tool_call>..." in vLLM's tests), then closes </seed:think> and makes it.
    reasoning_exit_at_line_start = True
