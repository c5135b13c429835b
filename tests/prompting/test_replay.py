"""Replay rules: how earlier turns and thinking controls reach the template."""

from datetime import UTC

import pytest

from tokenyard.conversation import (
    Conversation,
    Message,
    Reasoning,
    Text,
    ThinkingControl,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from tokenyard.prompting.profiles import PROFILES
from tokenyard.prompting.replay import ExactJson, template_input
from tokenyard.prompting.template import ChatTemplate

from ..fixtures import load_tokenizer

CHATML_NO_REASONING = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TOOL = ToolSpec(name="Bash", parameters={"type": "object", "properties": {"command": {"type": "string"}}})


def conv(*messages, thinking="default", effort=None, kwargs=None, system=("sys",)):
    return Conversation(
        model="m",
        system=[Text(text=s) for s in system],
        messages=list(messages),
        tools=[TOOL],
        thinking=ThinkingControl(mode=thinking, effort=effort),
        template_kwargs=kwargs or {},
    )


def user(text):
    return Message(role="user", parts=[Text(text=text)])


def assistant(*parts):
    return Message(role="assistant", parts=list(parts))


CALL = ToolCall(id="c1", name="Bash", arguments='{"command":"ls"}')


def traits_of(family):
    return ChatTemplate(load_tokenizer(family).chat_template).traits


def test_reasoning_field_when_the_template_reads_it():
    prepared = template_input(
        conv(user("hi"), assistant(Reasoning(text="R"), Text(text="A"))), PROFILES["qwen3"], traits_of("qwen3")
    )
    assert prepared.messages[-1] == {"role": "assistant", "content": "A", "reasoning_content": "R"}


def test_markers_in_content_when_the_template_does_not():
    traits = ChatTemplate(CHATML_NO_REASONING).traits
    prepared = template_input(
        conv(user("hi"), assistant(Reasoning(text="R"), Text(text="A"))), PROFILES["qwen3"], traits
    )
    assert prepared.messages[-1]["content"] == "<think>\nR\n</think>\n\nA"
    assert "reasoning_content" not in prepared.messages[-1]


def test_gpt_oss_reads_thinking():
    prepared = template_input(
        conv(user("hi"), assistant(Reasoning(text="R"), CALL)), PROFILES["gpt-oss"], traits_of("gpt-oss")
    )
    assert prepared.messages[-1]["thinking"] == "R" and "reasoning_content" not in prepared.messages[-1]


def test_interleaved_turn_becomes_one_message_per_segment_in_order():
    turn = assistant(
        Reasoning(text="R1"), CALL, Reasoning(text="R2"), CALL.model_copy(update={"id": "c2"}), Text(text="done")
    )
    prepared = template_input(conv(user("hi"), turn), PROFILES["qwen3"], traits_of("qwen3"))
    a, b = prepared.messages[-2:]
    assert a["reasoning_content"] == "R1" and [c["id"] for c in a["tool_calls"]] == ["c1"]
    assert b["reasoning_content"] == "R2" and [c["id"] for c in b["tool_calls"]] == ["c2"] and b["content"] == "done"


def test_redacted_reasoning_is_not_rendered():
    turn = assistant(Reasoning(text="", opaque="EuYBCkQ..."), Text(text="A"))
    prepared = template_input(conv(user("hi"), turn), PROFILES["qwen3"], traits_of("qwen3"))
    assert prepared.messages[-1] == {"role": "assistant", "content": "A"}


def test_tool_results_become_tool_messages_and_trailing_text_a_user_message():
    results = Message(
        role="user",
        parts=[
            ToolResult(tool_call_id="c1", content=[Text(text="file.txt")]),
            ToolResult(tool_call_id="c2", content=[Text(text="denied")], is_error=True),
            Text(text="also check git"),
        ],
    )
    prepared = template_input(conv(user("hi"), assistant(CALL), results), PROFILES["qwen3"], traits_of("qwen3"))
    assert prepared.messages[-3:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "file.txt"},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: denied"},
        {"role": "user", "content": "also check git"},
    ]


def test_system_blocks_and_leading_developer_messages_form_the_system_prompt():
    developer = Message(role="developer", parts=[Text(text="codex instructions")])
    prepared = template_input(conv(developer, user("hi"), system=("a", "b")), PROFILES["qwen3"], traits_of("qwen3"))
    assert prepared.messages[0] == {"role": "system", "content": "a\n\nb\n\ncodex instructions"}


@pytest.mark.parametrize(
    "thinking,effort,expected",
    [
        ("default", None, True),
        ("adaptive", None, True),
        ("enabled", None, True),
        ("disabled", None, False),
        ("default", "none", False),
    ],
)
def test_thinking_controls(thinking, effort, expected):
    prepared = template_input(conv(user("hi"), thinking=thinking, effort=effort), PROFILES["qwen3"], traits_of("qwen3"))
    assert prepared.kwargs["enable_thinking"] is expected and prepared.thinking_enabled is expected
    assert ("truncate_history_thinking" in prepared.kwargs) is expected


def test_history_thinking_is_kept_where_the_family_would_drop_it():
    prepared = template_input(conv(user("hi"), thinking="adaptive"), PROFILES["glm-4.7"], traits_of("glm-4.7"))
    assert prepared.kwargs["clear_thinking"] is False and prepared.kwargs["truncate_history_thinking"] is False
    off = template_input(conv(user("hi"), thinking="disabled"), PROFILES["glm-4.7"], traits_of("glm-4.7"))
    assert "clear_thinking" not in off.kwargs and off.kwargs["enable_thinking"] is False


def test_reasoning_effort_reaches_templates_that_read_it():
    prepared = template_input(conv(user("hi"), effort="high"), PROFILES["gpt-oss"], traits_of("gpt-oss"))
    assert prepared.kwargs["reasoning_effort"] == "high"


def test_client_template_kwargs_win():
    prepared = template_input(
        conv(user("hi"), kwargs={"enable_thinking": False}), PROFILES["qwen3"], traits_of("qwen3")
    )
    assert prepared.kwargs["enable_thinking"] is False and prepared.thinking_enabled is False


def test_arguments_as_the_template_reads_them():
    traits = traits_of("qwen3")  # uses `arguments | tojson` and accepts strings?
    prepared = template_input(conv(user("hi"), assistant(CALL)), PROFILES["qwen3"], traits)
    arguments = prepared.messages[-1]["tool_calls"][0]["function"]["arguments"]
    if traits.accepts_string_arguments:
        assert arguments == '{"command":"ls"}'
    else:
        assert (
            isinstance(arguments, ExactJson)
            and arguments == {"command": "ls"}
            and arguments.json_text == '{"command":"ls"}'
        )


def test_compact_arguments_survive_rendering_exactly():
    # Whatever the template does with arguments, the model's own JSON text comes back.
    from datetime import datetime

    from tokenyard.prompting.render import PromptRenderer

    for family in ("qwen3", "deepseek-v3.1", "kimi-k2", "gpt-oss", "llama-3.1"):
        tokenizer = load_tokenizer(family)
        template = ChatTemplate(tokenizer.chat_template, bos_token=tokenizer.bos_token, eos_token=tokenizer.eos_token)
        from tokenyard.prompting.profiles import detect_profile

        renderer = PromptRenderer(detect_profile(None, tokenizer.chat_template), template, tokenizer)
        call = ToolCall(id="functions.Bash:0", name="Bash", arguments='{"command":"ls -la","n":[1,2]}')
        prompt = renderer.render(
            conv(
                user("hi"),
                assistant(call),
                Message(role="user", parts=[ToolResult(tool_call_id="functions.Bash:0", content=[Text(text="ok")])]),
            ),
            now=datetime(2026, 1, 1, tzinfo=UTC),
        )
        assert '{"command":"ls -la","n":[1,2]}' in prompt.text, family
