"""InternLM2 / Intern-S1 (`internlm`; SGLang's `interns1`): one JSON call per
action block,

    <|action_start|><|plugin|>
    {"name": "get_weather", "parameters": {"city": "Tokyo", "days": 3}}<|action_end|>

with or without a space between the two opening tokens; the arguments key is
`parameters` (`arguments` is read too)."""

from __future__ import annotations

from .hermes import HermesToolParser


class InternLMToolParser(HermesToolParser):
    name = "internlm"
    aliases = ("interns1",)
    start_markers = ("<|action_start|><|plugin|>", "<|action_start|> <|plugin|>")
    close_tag = "<|action_end|>"
