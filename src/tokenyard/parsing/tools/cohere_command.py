"""Cohere Command R7B / Command A (`cohere_command3`) and Command A Plus / 4
(`cohere_command4`): a JSON list of actions after the reasoning,

    <|START_ACTION|>[
        {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Tokyo", "days": 3}}
    ]<|END_ACTION|>

The call's name is under `tool_name` and its arguments under `parameters`; the
`tool_call_id` the model numbers (the call's position in the conversation, which
the template renumbers itself) is kept as the call's id unless it collides with one
already used (`CallIds`), as vLLM and llama.cpp do. Both generations write the same
action block; they differ in the text block around a plain answer (reasoning format
`cohere_command`).
"""

from __future__ import annotations

from .base import JsonCallReader
from .json_call_list import JsonCallListParser


class _ActionReader(JsonCallReader):
    name_keys = frozenset(("tool_name", "name"))
    id_keys = frozenset(("tool_call_id",))


class CohereCommandToolParser(JsonCallListParser):
    name = "cohere_command4"
    aliases = ("cohere_command3",)
    start_markers = ("<|START_ACTION|>",)
    close_tag = "<|END_ACTION|>"
    # The end-of-turn token (the engine stops on it) is a control token, never text.
    stray_markers = ("<|END_OF_TURN_TOKEN|>",)
    reader = _ActionReader
