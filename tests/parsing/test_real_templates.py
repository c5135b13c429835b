"""Detection and parsing proven on the real chat templates llama.cpp ships (its
`models/templates`, in the llama-cpp-python sdist the fixtures fetch).

Each template is detected from its text alone, then an assistant turn it renders
(reasoning, text, calls; transformers' renderer, not tokenyard's prompt path) is
parsed back by the detected family's parsers, whole and one character at a time:
names, JSON-equal arguments, text and reasoning come back exactly (block-edge
whitespace aside).
"""

from __future__ import annotations

from functools import cache

import pytest

from tokenyard.conversation import ToolSpec
from tokenyard.events import ReasoningDelta, TextDelta, ToolCallIncomplete, ToolCallReady, merge_adjacent
from tokenyard.families.reasoning import REASONING_BY_NAME
from tokenyard.parsing.splitter import OutputSplitter
from tokenyard.parsing.tools.base import CallIds
from tokenyard.prompting.profiles import ModelProfile, detect_profile

from .real_templates import REAL_TEMPLATES
from .template_turns import WEATHER_SCHEMA, Turn, llama_cpp_templates, render_turn

WEATHER = ToolSpec(name="get_weather", description="Weather forecast", parameters=WEATHER_SCHEMA)
NAMES = sorted(REAL_TEMPLATES)


def test_the_table_names_every_real_template():
    assert sorted(llama_cpp_templates()) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_family_detected_from_the_template_alone(name):
    assert detect_profile(None, llama_cpp_templates()[name]).family == REAL_TEMPLATES[name].family


def _parse(profile: ModelProfile, turn: Turn, chunks: list[str]) -> tuple[str, str, tuple, tuple]:
    markers = profile.reasoning_markers
    opened = bool(markers and turn.prompt.rstrip().endswith(markers[0].rstrip()))
    splitter = OutputSplitter(
        profile.reasoning_parser,
        profile.tool_parser,
        tools=[WEATHER],
        call_ids=CallIds(nonce="t"),
        prompt_opened_reasoning=opened,
    )
    events = []
    for chunk in chunks:
        events += splitter.feed(chunk)
    events = merge_adjacent([*events, *splitter.finish()])
    return (
        "".join(e.text for e in events if type(e) is ReasoningDelta).strip(),
        "".join(e.text for e in events if type(e) is TextDelta).strip(),
        tuple((e.name, e.input()) for e in events if type(e) is ToolCallReady),
        tuple(e.name for e in events if type(e) is ToolCallIncomplete),
    )


@cache
def round_trip(name: str, with_calls: bool) -> tuple[Turn, bool] | None:
    """The turn the template renders and whether it parses back exactly, whole and
    one character at a time; None where the template renders no such turn."""
    expect = REAL_TEMPLATES[name]
    profile = detect_profile(None, llama_cpp_templates()[name])
    fmt = REASONING_BY_NAME.get(profile.reasoning_parser or "")
    block = (fmt.start, fmt.end) if fmt else ((), ())
    turn = render_turn(llama_cpp_templates()[name], profile.stop, with_calls, expect.calls, block)
    if turn is None:
        return None
    want = (turn.reasoning, turn.text, turn.calls, ())
    exact = _parse(profile, turn, [turn.output]) == want and _parse(profile, turn, list(turn.output)) == want
    return turn, exact


@pytest.mark.parametrize("with_calls", [True, False], ids=["calls", "answer"])
@pytest.mark.parametrize("name", NAMES)
def test_rendered_turn_parses_back_exactly(name, with_calls):
    result = round_trip(name, with_calls)
    if result is None:
        pytest.skip("the template renders no such turn as a continuation of its generation prompt")
    turn, exact = result
    if REAL_TEMPLATES[name].gap is None:
        assert exact, f"{name}: {turn.output!r} did not parse back as {(turn.reasoning, turn.text, turn.calls)!r}"
    elif with_calls:
        # A known gap: it must still be one, or the table says too little.
        assert not exact, f"{name} round-trips now: drop its gap from real_templates.py"


def test_how_many_templates_round_trip():
    """The measured floor: templates whose rendered call turn and plain answer both
    parse back exactly (a template rendering no call turn counts by its answer)."""
    exact = 0
    for name in NAMES:
        results = [round_trip(name, with_calls) for with_calls in (True, False)]
        rendered = [r for r in results if r is not None]
        if rendered and all(ok for _, ok in rendered):
            exact += 1
    assert exact >= 69, exact
