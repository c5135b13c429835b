"""System messages in the middle and at the end of a conversation, as Claude Code
sends them (beta `mid-conversation-system-2026-04-07`): an environment note after
the first user message, reminders after tool results. Each family's template is
probed at start-up; either way the render succeeds, the billing header is gone,
and turn N's prompt plus the model's output stays a token prefix of turn N+1."""

from __future__ import annotations

import pytest

from tokenyard.conversation import Conversation, Message, Text, ThinkingControl, ToolCall, ToolResult
from tokenyard.prompting.replay import InlineSystem

from .test_prefix_stability import HEADER, NOW, PLAN, RESULTS, SYSTEM, TOOLS, model_output, parse_output, setup_family

FAMILIES = {
    "qwen3": InlineSystem.PRESERVE,
    "qwen3.5": InlineSystem.FOLD,  # its template raises on a non-leading system message
    "qwen3-coder": InlineSystem.PRESERVE,
    "glm-4.7": InlineSystem.PRESERVE,
    "deepseek-v3.1": InlineSystem.FOLD,  # hoists every system message to the top
    "deepseek-v4": InlineSystem.FOLD,
    "gpt-oss": InlineSystem.FOLD,
    "kimi-k2": InlineSystem.PRESERVE,
}
ENVIRONMENT = "# Environment\nYou have been invoked in the following environment:\n - Platform: linux"
REMINDER = "<system-reminder>\nToken usage: {} tokens so far. Keep going.\n</system-reminder>"


def system(text: str) -> Message:
    return Message(role="system", parts=[Text(text=text)])


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_probe_decides_per_template(family):
    renderer = setup_family(family)[3]
    assert renderer.inline_system is FAMILIES[family]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_reminders_after_tool_results_keep_every_turn_a_prefix_of_the_next(family):
    tokenizer, _, profile, renderer = setup_family(family)
    conversation = Conversation(
        model=family,
        system=[Text(text=HEADER.format("a3f")), Text(text=SYSTEM)],
        messages=[
            Message(role="user", parts=[Text(text="The tests fail. Fix the bug.")]),
            # Claude Code repeats the billing header in inline system text, too.
            system(HEADER.format("a3f") + "\n" + ENVIRONMENT),
        ],
        tools=TOOLS,
        thinking=ThinkingControl(mode="adaptive"),
    )
    for step, planned in enumerate(PLAN[: len(RESULTS)]):
        prompt = renderer.render(conversation, now=NOW)
        assert "x-anthropic-billing-header" not in prompt.text
        assert "You have been invoked in the following environment" in prompt.text
        if step:  # the previous turn ended with a trailing system message (gpt-oss quotes tool text as JSON)
            assert f"Token usage: {step - 1} tokens so far" in prompt.text
        raw = model_output(renderer, conversation, planned)
        stop = next((s for s in profile.stop if raw.endswith(s)), "")
        message = parse_output(profile, raw, prompt, stop)
        ids = iter(p.id for p in planned if isinstance(p, ToolCall))
        message = Message(
            role="assistant",
            parts=[p.model_copy(update={"id": next(ids)}) if isinstance(p, ToolCall) else p for p in message.parts],
        )
        result = ToolResult(tool_call_id=f"call_{step}", content=[Text(text=RESULTS[step])])
        messages = [
            *conversation.messages,
            message,
            Message(role="user", parts=[result]),
            system(REMINDER.format(step)),
        ]
        conversation = conversation.model_copy(update={"messages": messages})
        before = tokenizer.encode(prompt.text + raw)
        after = renderer.render(conversation, now=NOW).token_ids
        matched = 0
        while matched < min(len(before), len(after)) and before[matched] == after[matched]:
            matched += 1
        assert matched == len(before), (
            f"{family} step {step}: diverged at token {matched} of {len(before)}: "
            f"{tokenizer.decode(before[matched - 5 : matched + 15])!r} vs {tokenizer.decode(after[matched - 5 : matched + 15])!r}"
        )
