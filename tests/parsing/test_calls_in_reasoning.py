"""A call met inside open reasoning (reasoning/parser.py `_hold`) is held until decided:
a call the model quotes or plans while thinking (more reasoning, then the end marker;
or the same call made again after the end marker) stays reasoning, so the harness runs
the real call once; a call right before the end marker, or in reasoning that never
closes, is a call.
Checked at every split point for a block format, a token-section format and
mistral's, through the splitter."""

from __future__ import annotations

import pytest

from tests.parsing.support import WEATHER, parse, splitter_factory, summary
from tokenyard.events import ToolCallReady, check_events

HERMES = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
KIMI = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
    '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>'
)
MISTRAL = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'

FORMATS = [
    pytest.param("qwen3", "hermes", "<think>", "</think>", HERMES, id="hermes"),
    pytest.param("kimi_k2", "kimi_k2", "<think>", "</think>", KIMI, id="kimi_k2"),
    pytest.param("mistral", "mistral", "[THINK]", "[/THINK]", MISTRAL, id="mistral"),
]
CALL = ("call", "get_weather", {"city": "Paris"})


@pytest.mark.parametrize(("reasoning", "tool", "open_", "close", "call"), FORMATS)
def test_quoted_call_then_real_call_is_one_call(reasoning, tool, open_, close, call):
    make = splitter_factory(reasoning, tool, [WEATHER])
    events = parse(make, f"{open_}I could write {call} like that.{close}\n\n{call}")
    assert summary(events) == [("reasoning", f"I could write {call} like that."), CALL]


@pytest.mark.parametrize(("reasoning", "tool", "open_", "close", "call"), FORMATS)
def test_call_in_unclosed_reasoning_at_end_of_output_is_a_call(reasoning, tool, open_, close, call):
    make = splitter_factory(reasoning, tool, [WEATHER])
    assert summary(parse(make, f"{open_}Let me call it.\n{call}\n")) == [("reasoning", "Let me call it."), CALL]
    assert summary(parse(make, f"{open_}Both.\n{call}\n{call}")) == [("reasoning", "Both."), CALL, CALL]


@pytest.mark.parametrize(("reasoning", "tool", "open_", "close", "call"), FORMATS)
def test_call_followed_by_more_reasoning_stays_reasoning(reasoning, tool, open_, close, call):
    make = splitter_factory(reasoning, tool, [WEATHER])
    events = parse(make, f"{open_}plan: {call}\nthen more.{close}Done.")
    assert summary(events) == [("reasoning", f"plan: {call}\nthen more."), ("text", "Done.")]


@pytest.mark.parametrize(("reasoning", "tool", "open_", "close", "call"), FORMATS)
def test_call_right_before_the_end_marker_is_a_call(reasoning, tool, open_, close, call):
    # The model called, then closed its reasoning (vLLM's recovery cases).
    make = splitter_factory(reasoning, tool, [WEATHER])
    events = parse(make, f"{open_}checked.\n{call}\n{close}Here it is.")
    assert summary(events) == [("reasoning", "checked."), CALL, ("text", "Here it is.")]


@pytest.mark.parametrize(("reasoning", "tool", "open_", "close", "call"), FORMATS)
def test_reasoning_that_never_closes_ends_at_the_call(reasoning, tool, open_, close, call):
    # No end marker ever comes: the model called without closing its reasoning, and
    # what follows the call is its answer (llama.cpp's ling3 prose-after-call case).
    make = splitter_factory(reasoning, tool, [WEATHER])
    events = parse(make, f"{open_}plan: {call} then an answer")
    assert summary(events) == [("reasoning", "plan:"), CALL, ("text", "then an answer")]


def test_undecided_call_past_the_hold_back_bound_is_read_as_a_call():
    # Nothing is held past MAX_HELD_CHARS: a long call in reasoning that never closed
    # streams as a call (the old rule), and the splitter releases nothing as text.
    splitter = splitter_factory("qwen3", "hermes", [WEATHER])()
    long_value = "x" * 20_000
    call = f'<tool_call>\n{{"name": "get_weather", "arguments": {{"city": "{long_value}"}}}}\n</tool_call>'
    text = f"<think>go {call}\nmore.</think>"
    events = []
    for i in range(0, len(text), 100):
        events.extend(splitter.feed(text[i : i + 100]))
    events.extend(splitter.finish())
    check_events(events, text)
    assert splitter.released_holds == 0
    assert [event.input() for event in events if type(event) is ToolCallReady] == [{"city": long_value}]
