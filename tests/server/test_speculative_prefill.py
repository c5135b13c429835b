"""`speculative_prefill`: a turn that ends in tool calls prefills the next turn's
prefix (prompt + answer + end of turn) while the tools run; the next turn finds it."""

from __future__ import annotations

import asyncio

import pytest

from tokenyard.conversation import AgentHints, Conversation, Message, Reasoning, Text, ToolCall, ToolResult, ToolSpec
from tokenyard.engines.simulated import SimulatedEngine
from tokenyard.events import Finish, PromptProcessed, ReasoningDelta, ToolCallReady
from tokenyard.server.loading import load
from tokenyard.server.pipeline import Pipeline
from tokenyard.settings import ModelSettings

from ..fixtures import model_dir

BASH = ToolSpec(
    name="Bash",
    description="Run a shell command",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)


@pytest.fixture(scope="module")
def qwen3():
    return load(ModelSettings(model=str(model_dir("qwen3")), engine="scripted", served_model_names=("test/model",)))


@pytest.mark.parametrize("speculate", [True, False])
def test_the_next_turns_prefix_is_prefilled_while_the_tools_run(qwen3, speculate):
    model, scripted = qwen3
    engine = SimulatedEngine(model.tokenizer, scripted, time_scale=0)
    pipeline = Pipeline(model, engine)
    hints = AgentHints(speculative_prefill=speculate)
    system = [Text(text="You are a coding agent.")]
    history = [Message(role="user", parts=[Text(text="List the files.")])]

    async def scenario():
        first = pipeline.start(Conversation(model="m", system=system, messages=history, tools=[BASH], hints=hints))
        events = [e async for e in first.events()]
        calls = [e for e in events if isinstance(e, ToolCallReady)]
        assert calls and next(e for e in events if isinstance(e, Finish)).reason == "tool_calls"
        await asyncio.gather(*pipeline._prefills)  # the tool "runs" meanwhile
        # The harness echoes the answer: its thinking, then its calls.
        thinking = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
        answer = [Reasoning(text=thinking), *(ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in calls)]
        result = [ToolResult(tool_call_id=c.id, content=[Text(text="README.md")]) for c in calls]
        follow_up = history + [Message(role="assistant", parts=answer), Message(role="tool", parts=result)]
        second = pipeline.start(Conversation(model="m", system=system, messages=follow_up, tools=[BASH], hints=hints))
        events = [e async for e in second.events()]
        return first, second, next(e for e in events if isinstance(e, PromptProcessed))

    first, second, processed = asyncio.run(scenario())
    prefill = engine.timings.get(f"{first.request_id}-prefill")
    if not speculate:
        assert prefill is None
        return
    assert prefill is not None and prefill.output_tokens <= 1
    # What was prefilled is the next prompt's prefix, past the first prompt and its
    # answer, so the next turn's cache hit covers all of its full blocks.
    assert len(first.prompt.token_ids) < prefill.prompt_tokens < len(second.prompt.token_ids)
    assert processed.cached_tokens == prefill.prompt_tokens // engine.block_size * engine.block_size


def test_the_prefilled_answer_carries_a_broken_call_as_the_text_the_client_got():
    """The next request carries a call that never completed as text (apis/call_hold.py),
    so the answer the prefill renders must too, or its prefix would not match."""
    from tokenyard.events import Marker, TextDelta, ToolCallIncomplete, ToolCallStart
    from tokenyard.server.pipeline import _TurnParts

    parts = _TurnParts()
    for event in [
        TextDelta("Listing."),
        Marker(" "),  # text once the call after it never completed
        ToolCallStart(0, "c0", "Bash"),
        ToolCallIncomplete(0, "c0", "Bash", '{"command": ', '<tool_call>{"name": "Bash", x}', "invalid_arguments"),
        Marker("\n"),  # the next call's edge
        ToolCallStart(1, "c1", "Bash"),
        ToolCallReady(1, "c1", "Bash", '{"command": "ls"}', "raw"),
    ]:
        parts.add(event)
    message = parts.message()
    assert [type(p).__name__ for p in message.parts] == ["Text", "ToolCall"]
    assert message.parts[0].text == 'Listing. <tool_call>{"name": "Bash", x}'
