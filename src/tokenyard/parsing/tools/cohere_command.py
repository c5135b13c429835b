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

from dataclasses import replace

from .base import JsonCallReader, starts_with
from .call_list import WHITESPACE
from .json_call_list import FIRST_SUBCLASS_STATE, LIST_OPEN, JsonCallListConfig, JsonCallListParser


class _ActionReader(JsonCallReader):
    name_keys = frozenset(("tool_name", "name"))
    id_keys = frozenset(("tool_call_id",))


class CohereCommandToolParser(JsonCallListParser):
    name = "cohere_command4"
    aliases = ("cohere_command3",)
    # The end-of-turn token (the engine stops on it) is a control token, never text.
    config = JsonCallListConfig(
        start_markers=("<|START_ACTION|>",), close_tag="<|END_ACTION|>", stray_markers=("<|END_OF_TURN_TOKEN|>",)
    )
    reader = _ActionReader


# Command R+'s states: between `Action:` and the list, its ```json fence.
_FENCE = FIRST_SUBCLASS_STATE


class CohereCommandRToolParser(JsonCallListParser):
    """Command R / R+ (the `tool_use` template): the same action objects, as a
    JSON list in a fenced block after `Action:`,

        Action: ```json
        [
            {
                "tool_name": "get_weather",
                "parameters": {"city": "Tokyo", "days": 3}
            }
        ]
        ```

    `Action:` followed by anything but the fence or a list is text, whole. The
    template's `directly-answer` action (the model choosing not to use a tool) is a
    call like any other: delivered, flagged undeclared unless the request declares it.
    """

    name = "cohere_command_r"
    aliases = ("command_r_plus",)
    config = replace(CohereCommandToolParser.config, start_markers=("Action:",), close_tag="```")
    reader = _ActionReader

    def _after_start_marker(self) -> int:
        return _FENCE

    def _step(self, buf: str, final: bool) -> int:
        if self._state != _FENCE:
            return super()._step(buf, final)
        i = WHITESPACE(buf).end()
        for fence in ("```json", "```"):
            found = starts_with(buf[i:], fence)
            if found is None and not final:
                return 0  # more input decides
            if found:
                i += len(fence)
                break
        self._pending += buf[:i]
        self._state = LIST_OPEN
        return i
