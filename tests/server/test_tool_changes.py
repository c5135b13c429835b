"""Mid-conversation tool changes through the Anthropic API with the official SDK
(the scripted model, Qwen3's real template): a tool added by a `tool_addition`
block is callable (also by a forced `tool_choice`), a tool removed by a
`tool_removal` block is not (a `tool_choice` naming it is a 400), and the added
tool's definition reaches the prompt after everything that came before."""

from __future__ import annotations

import anthropic
import pytest

from .serving import prompt_log, running_server

BASH = {
    "name": "Bash",
    "description": "Run a shell command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
GREP = {
    "name": "mcp__search__grep",
    "description": "Search files for a pattern.",
    "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
}
FIRST_TURN = [
    {"role": "user", "content": "Find the TODOs."},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py b.py"}]},
]
CHANGE = {
    "role": "system",
    "content": [
        {"type": "tool_addition", "tool": {"type": "tool_definition", "definition": GREP}},
        {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "Bash"}},
    ],
}
BETAS = "mid-conversation-tool-changes-2026-07-01,inline-tools-2026-09-15"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with running_server("qwen3", tmp_path=tmp_path_factory.mktemp("changes")) as served:
        yield served


def create(url: str, messages: list, **extra) -> anthropic.types.Message:
    client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
    return client.messages.create(
        model="test/model",
        max_tokens=256,
        tools=[BASH],
        messages=messages,
        extra_headers={"anthropic-beta": BETAS},
        **extra,
    )


def test_an_added_tool_is_callable_and_a_removed_one_is_not(served):
    url, state = served
    answered = {"role": "assistant", "content": "Two files."}
    reply = create(url, [*FIRST_TURN, answered, CHANGE, {"role": "user", "content": "Search now."}])
    calls = [b for b in reply.content if b.type == "tool_use"]
    assert [c.name for c in calls] == ["mcp__search__grep"], "Bash was removed; the added tool is the one left"
    prompt = prompt_log(state)[-1]["prompt_text"]
    tools_section = prompt[: prompt.index("Find the TODOs.")]
    assert "mcp__search__grep" not in tools_section and '"Bash"' in tools_section  # the system list never changes
    assert "Search files for a pattern." in prompt[prompt.index("a.py b.py") :]

    forced = create(
        url,
        [*FIRST_TURN, CHANGE],
        tool_choice={"type": "tool", "name": "mcp__search__grep"},
        thinking={"type": "disabled"},
    )
    assert [b.name for b in forced.content if b.type == "tool_use"] == ["mcp__search__grep"]
    with pytest.raises(anthropic.BadRequestError) as refused:
        create(url, [*FIRST_TURN, CHANGE], tool_choice={"type": "tool", "name": "Bash"})
    assert "Bash" in refused.value.message
