"""A reasoning family reasons before a forced call (`tool_choice` required or named),
over the whole catalog: the real pipeline over each family's profile, with the
scripted model writing the family's wire format (engines/wire.py) and the
reasoning-first path (engines/reason_first.py) stopping it at the reasoning block's
end marker and continuing after the injected call opener. The turn is a reasoning
block, then one call to the forced tool; with a budget the block is cut at it and
the call still follows; with thinking off the call comes first.
"""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest

from tokenyard.conversation import Conversation, Message, Text, ThinkingControl, ToolChoice, ToolSpec
from tokenyard.engines.scripted import ScriptedEngine
from tokenyard.engines.simulated import SimulatedEngine
from tokenyard.events import Finish, ReasoningDelta, TextDelta, ToolCallReady, ToolCallStart
from tokenyard.families.call_syntax import call_syntax
from tokenyard.families.catalog import FAMILIES
from tokenyard.parsing.registry import check_tool_parser_name
from tokenyard.prompting.prefix_watch import PromptFacts
from tokenyard.prompting.profiles import PROFILES
from tokenyard.prompting.render import RenderedPrompt
from tokenyard.server.pipeline import Pipeline

# Reasoning families whose calls a forced tool choice can steer.
REASONING_WITH_TOOLS = [
    f.name for f in FAMILIES if f.reasoning and f.tool_format and call_syntax(check_tool_parser_name(f.tool_format))
]
TOOLS = [
    ToolSpec(name="Bash", parameters={"type": "object", "properties": {"command": {"type": "string"}}}),
    ToolSpec(
        name="get_weather",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    ),
]
LONG_REASONING = " ".join(f"step {i}" for i in range(100))


class _Detokenizer:
    def push(self, token: int) -> str:
        return chr(token)

    def flush(self) -> str:
        return ""


class CharTokenizer:
    """One token per character: token ids read back as the text."""

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(map(chr, ids))

    def detokenizer(self) -> _Detokenizer:
        return _Detokenizer()


def turn(name: str, choice: ToolChoice, thinking: ThinkingControl, script=None, engine=None) -> list:
    """The events of one forced turn of family `name` (a template that leaves the
    reasoning block for the model to open), on the scripted engine or `engine`."""
    profile = PROFILES[name]
    tokenizer = CharTokenizer()
    engine = engine or scripted(name, tokenizer, script)
    model = SimpleNamespace(
        profile=profile,
        tokenizer=tokenizer,
        stop_token_ids=lambda: [],
        control_tokens=lambda: {},
        stop_texts=lambda: [],
        frequency_penalty=None,
    )
    pipeline = Pipeline(model, engine)  # type: ignore[arg-type]
    conversation = Conversation(
        model="test/model",
        messages=[Message(role="user", parts=[Text(text="Weather in Paris?")])],
        tools=TOOLS,
        tool_choice=choice,
        thinking=thinking,
    )
    prefill = pipeline._prefill_for(conversation)
    assert prefill is not None
    extra = prefill(False, thinking.enabled)
    text = "<prompt>" + extra
    prompt = RenderedPrompt(text, tokenizer.encode(text), False, thinking.enabled, False, PromptFacts(), extra)

    async def collect() -> list:
        return [e async for e in pipeline._begin(conversation, prompt, None, "call_").events()]

    return asyncio.run(collect())


def scripted(name: str, tokenizer: CharTokenizer, script=None) -> ScriptedEngine:
    profile = PROFILES[name]
    return ScriptedEngine(
        tokenizer, tool_format=profile.tool_parser, reasoning_format=profile.reasoning_parser, script=script
    )


def structure(events: list) -> list[str]:
    """The turn's parts in order: reasoning, text, call:NAME (runs merged)."""
    out: list[str] = []
    for e in events:
        part = (
            "reasoning"
            if isinstance(e, ReasoningDelta) and e.text.strip()
            else "text"
            if isinstance(e, TextDelta) and e.text.strip()
            else f"call:{e.name}"
            if isinstance(e, ToolCallStart)
            else None
        )
        if part and (not out or out[-1] != part):
            out.append(part)
    return out


@pytest.mark.parametrize("name", REASONING_WITH_TOOLS)
def test_a_reasoning_family_reasons_then_makes_the_forced_call(name):
    for choice, tool in (
        (ToolChoice(mode="named", name="get_weather"), "get_weather"),
        (ToolChoice(mode="required"), "Bash"),
    ):
        events = turn(name, choice, ThinkingControl(mode="enabled"))
        assert structure(events) == ["reasoning", f"call:{tool}"], (name, choice.mode)
        ready = [e for e in events if isinstance(e, ToolCallReady)]
        assert [e.name for e in ready] == [tool]
        assert isinstance(events[-1], Finish) and events[-1].reason == "tool_calls"


@pytest.mark.parametrize("name", REASONING_WITH_TOOLS)
def test_the_forced_path_honours_the_budget(name, tmp_path):
    script = tmp_path / "script.json"
    call = {"call": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    script.write_text(json.dumps([[{"reasoning": LONG_REASONING}, call]]))
    events = turn(
        name, ToolChoice(mode="named", name="get_weather"), ThinkingControl(mode="enabled", budget_tokens=20), script
    )
    thought = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert 0 < len(thought.strip()) <= 20 and LONG_REASONING.startswith(thought.strip())
    assert structure(events) == ["reasoning", "call:get_weather"]
    assert isinstance(events[-1], Finish) and events[-1].reason == "tool_calls"


@pytest.mark.parametrize("name", REASONING_WITH_TOOLS[:3])
def test_with_thinking_off_the_call_comes_first(name):
    events = turn(name, ToolChoice(mode="named", name="get_weather"), ThinkingControl(mode="disabled"))
    assert structure(events) == ["call:get_weather"]


def test_the_simulated_engine_reasons_then_calls_and_frees_the_first_request():
    # The first request is aborted at the end marker: its blocks go back to the pool.
    engine = SimulatedEngine(CharTokenizer(), scripted("qwen3", CharTokenizer()), time_scale=0)
    events = turn("qwen3", ToolChoice(mode="named", name="get_weather"), ThinkingControl(mode="enabled"), engine=engine)
    assert structure(events) == ["reasoning", "call:get_weather"]
    assert all(block.ref_count == 0 for block in engine.pool.blocks)
