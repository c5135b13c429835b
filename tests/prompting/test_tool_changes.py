"""Mid-conversation tool changes: Anthropic `tool_addition` / `tool_removal` blocks in
a system message (betas mid-conversation-tool-changes-2026-07-01 and
inline-tools-2026-09-15, the shapes Claude Code 2.1.330 sends) and tools a Chat
system message declares (Kimi K3's templates read them).

An added tool is defined where it was added, never in the system tool list, so
turn N's prompt (with the model's answer) is a token prefix of turn N+1's; it is
callable from then on. A removed tool is no longer callable: a call to it is
parsed as a call to an undeclared tool.
"""

from __future__ import annotations

import json
import tarfile

import pytest

from tokenyard.apis.anthropic.requests import to_conversation as anthropic_conversation
from tokenyard.apis.anthropic.schema import MessagesRequest
from tokenyard.apis.openai_chat.requests import parse_request, to_conversation
from tokenyard.conversation import (
    Conversation,
    Message,
    Reasoning,
    Text,
    ThinkingControl,
    ToolCall,
    ToolChange,
    ToolResult,
)
from tokenyard.events import ToolCallStart
from tokenyard.parsing.splitter import OutputSplitter
from tokenyard.parsing.tools.base import CallIds
from tokenyard.prompting.replay import InlineSystem, template_input
from tokenyard.prompting.template import ChatTemplate

from ..fixtures import fixtures_root
from .test_prefix_stability import NOW, SYSTEM, TOOLS, model_output, parse_output, setup_family

GREP = {
    "name": "mcp__search__grep",
    "description": "Search files for a pattern.",
    "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
}
ANTHROPIC_TOOLS = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in TOOLS]
FAMILIES = ["qwen3", "qwen3-coder", "glm-4.7", "deepseek-v3.1", "gpt-oss", "kimi-k2"]


def addition(definition: dict) -> dict:
    """Claude Code's inline-tools form."""
    return {"type": "tool_addition", "tool": {"type": "tool_definition", "definition": definition}}


def removal(name: str) -> dict:
    return {"type": "tool_removal", "tool": {"type": "tool_reference", "name": name}}


def messages_body(messages: list[dict], tools: list[dict] = ANTHROPIC_TOOLS) -> dict:
    return {"model": "m", "max_tokens": 64, "system": SYSTEM, "tools": tools, "messages": messages}


def conversation_of(body: dict) -> Conversation:
    conversation = anthropic_conversation(MessagesRequest.model_validate(body))
    return conversation.model_copy(update={"thinking": ThinkingControl(mode="adaptive")})


FIRST_TURN = [
    {"role": "user", "content": "Find the TODOs."},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py b.py"}]},
]


def test_anthropic_blocks_become_tool_changes():
    body = messages_body(
        [
            *FIRST_TURN,
            {
                "role": "system",
                "content": [
                    addition(GREP),
                    {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "Read"}},
                    removal("Bash"),
                ],
            },
        ]
    )
    conversation = conversation_of(body)
    changes = conversation.messages[-1].parts
    assert [(c.action, c.tool_name) for c in changes if isinstance(c, ToolChange)] == [
        ("add", "mcp__search__grep"),
        ("add", "Read"),
        ("remove", "Bash"),
    ]
    assert changes[0].tool.parameters == GREP["input_schema"] and changes[1].tool is None
    assert conversation.tools == anthropic_conversation(MessagesRequest.model_validate(messages_body([]))).tools
    names = {t.name for t in conversation.model_tools()}
    assert "mcp__search__grep" in names and "Read" in names and "Bash" not in names


def test_a_removed_tool_is_parsed_as_undeclared_and_an_added_one_as_declared():
    body = messages_body([*FIRST_TURN, {"role": "system", "content": [addition(GREP), removal("Bash")]}])
    tools = conversation_of(body).model_tools()
    splitter = OutputSplitter(None, "hermes", tools=tools, call_ids=CallIds(nonce="t"))
    raw = (
        '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "mcp__search__grep", "arguments": {"pattern": "TODO"}}\n</tool_call>'
    )
    starts = [e for e in splitter.feed(raw) + splitter.finish() if isinstance(e, ToolCallStart)]
    assert [(s.name, s.declared) for s in starts] == [("Bash", False), ("mcp__search__grep", True)]


@pytest.mark.parametrize("family", FAMILIES)
def test_an_added_tool_is_defined_in_place_and_keeps_the_prefix(family):
    tokenizer, _, profile, renderer = setup_family(family)
    turn = conversation_of(messages_body(FIRST_TURN))
    prompt = renderer.render(turn, now=NOW)
    planned = [Reasoning(text="Read the file."), ToolCall(id="call_9", name="Read", arguments='{"path": "a.py"}')]
    raw = model_output(renderer, turn, planned)
    stop = next((s for s in profile.stop if raw.endswith(s)), "")
    answer = parse_output(profile, raw, prompt, stop)
    answer = answer.model_copy(
        update={
            "parts": [p.model_copy(update={"id": "call_9"}) if isinstance(p, ToolCall) else p for p in answer.parts]
        }
    )
    result = Message(role="user", parts=[ToolResult(tool_call_id="call_9", content=[Text(text="# TODO: x")])])
    # Claude Code announces the change in a system message after the tool result.
    change = conversation_of(
        messages_body([*FIRST_TURN, {"role": "system", "content": [addition(GREP), removal("Read")]}])
    ).messages[-1]
    following = turn.model_copy(update={"messages": [*turn.messages, answer, result, change]})
    next_prompt = renderer.render(following, now=NOW)
    before = tokenizer.encode(prompt.text + raw)
    assert next_prompt.token_ids[: len(before)] == before, "turn N's prompt and answer are a prefix of turn N+1's"
    appended = next_prompt.text[len(prompt.text + raw) :]
    assert "mcp__search__grep" in appended and "Search files for a pattern." in appended
    assert "Tools removed; from now on they can not be called: Read" in appended
    assert "mcp__search__grep" not in next_prompt.text[: len(prompt.text)]


def _kimi_k3_template() -> ChatTemplate:
    sdist = fixtures_root() / "downloads" / "llama_cpp_python-0.3.36.tar.gz"
    if not sdist.exists():
        pytest.skip("llama-cpp-python sdist not fetched; run `python scripts/build_fixtures.py`")
    with tarfile.open(sdist) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("/models/templates/Kimi-K3.jinja"))
        source = archive.extractfile(member).read().decode()  # type: ignore[union-attr]
    return ChatTemplate(source)


def test_kimi_k3_declares_added_tools_natively_where_they_appear():
    template = _kimi_k3_template()
    assert template.traits.declares_message_tools
    _, _, profile, _ = setup_family("kimi-k2")
    bash = {"type": "function", "function": {"name": "Bash", "description": "Run", "parameters": TOOLS[0].parameters}}
    grep = {"type": "function", "function": {"name": GREP["name"], "parameters": GREP["input_schema"]}}
    base = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Find the TODOs."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "ls"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    ]
    added = [
        *base,
        {"role": "system", "content": "Tools changed.", "tools": [grep]},
        {"role": "user", "content": "grep"},
    ]
    first, second = (
        template_input(
            to_conversation(parse_request({"model": "m", "messages": messages, "tools": [bash]})),
            profile,
            template.traits,
            inline_system=InlineSystem.PRESERVE,
        )
        for messages in (base, added)
    )
    assert [m for m in second.messages if m.get("tools")] == [
        {
            "role": "system",
            "content": "",
            "tools": [{"type": "function", "function": {**grep["function"], "description": ""}}],
        }
    ]
    render = [template.render(p.messages, p.tools, False, now=NOW) for p in (first, second)]
    assert render[1].startswith(render[0])
    appended = render[1][len(render[0]) :]
    assert "## New Tools Available" in appended and json.dumps(GREP["name"]) in appended
    assert "## New Tools Available" not in render[0] and GREP["name"] not in render[0]


def test_a_tool_removed_then_added_again_is_callable():
    conversation = Conversation(
        model="m",
        messages=[
            Message(role="user", parts=[Text(text="go")]),
            Message(role="assistant", parts=[ToolCall(id="c", name="Bash", arguments="{}")]),
            Message(role="user", parts=[ToolResult(tool_call_id="c", content=[Text(text="ok")])]),
            Message(role="system", parts=[ToolChange(action="remove", tool_name="Bash")]),
            Message(role="system", parts=[ToolChange(action="add", tool_name="Bash")]),
        ],
        tools=TOOLS,
    )
    assert "Bash" in {t.name for t in conversation.model_tools()}
    removed = conversation.model_copy(update={"messages": conversation.messages[:-1]})
    assert "Bash" not in {t.name for t in removed.model_tools()}
