"""Cohere Command R7B / Command A (`cohere_command3`) and Command A Plus / 4
(`cohere_command4`): a JSON list of actions after the reasoning,

    <|START_ACTION|>[
        {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Tokyo", "days": 3}}
    ]<|END_ACTION|>

The call's name is under `tool_name` and its arguments under `parameters`; the
`tool_call_id` the model numbers is not kept (ids must be unique across the
conversation). Both generations write the same action block; they differ in the
text block around a plain answer (reasoning format `cohere_command`).
"""

from __future__ import annotations

from .base import JsonCallReader
from .json_call_list import JsonCallListParser


class _ActionReader(JsonCallReader):
    name_keys = frozenset(("tool_name", "name"))


class CohereCommandToolParser(JsonCallListParser):
    name = "cohere_command4"
    aliases = ("cohere_command3",)
    start_markers = ("<|START_ACTION|>",)
    close_tag = "<|END_ACTION|>"
    reader = _ActionReader
