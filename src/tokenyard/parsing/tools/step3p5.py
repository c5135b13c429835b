"""StepFun Step-3.5 / Step-3.7: Qwen3-Coder's call grammar unchanged
(`<tool_call>\\n<function=...>\\n<parameter=...>\\n...\\n</parameter>...`). A
name of its own because vLLM and SGLang give it one; what differs is its
reasoning (the template always opens `<think>`: reasoning parser `step3p5`), and
that Step-3.5 misspells tags now and then (`<function bash>`, a `>` or a
`</parameter>` left out): those are read where they name a declared tool or
parameter (`lenient_tags`; a value then also ends at the tag of a declared
parameter the call has not passed yet)."""

from __future__ import annotations

from typing import ClassVar

from .qwen3_coder import Qwen3CoderToolParser


class Step3p5ToolParser(Qwen3CoderToolParser):
    name = "step3p5"
    aliases: ClassVar[tuple[str, ...]] = ()
    lenient_tags = True
