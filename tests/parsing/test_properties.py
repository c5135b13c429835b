"""Property tests over every tool-call parser and its family's reasoning parser:
random text with real markers and fragments of real calls spliced in, fed in random
chunks, never raises and conserves every character (reasoning/text/marker/call raw),
and every call keeps the Start → Delta* → Ready|Incomplete contract."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenyard.events import check_events
from tokenyard.parsing.reasoning.parser import reasoning_format
from tokenyard.parsing.registry import tool_parser_names

from .support import WEATHER, run_chunks, splitter_factory
from .wire_examples import TOOL_EXAMPLES

NOISE = ["<", ">", "{", "}", "[", "]", '"', ",", ":", "\n", " ", "\\", "|", "｜", "=", "/", "(", ")", "name", "Tokyo"]


def fragments_strategy(tool: str, reasoning: str | None):
    example = TOOL_EXAMPLES[tool][1]
    pieces = [example]
    # Every way of cutting the real example in two: half-calls, lone closers.
    pieces += [example[:i] for i in range(1, len(example), 7)] + [example[i:] for i in range(1, len(example), 7)]
    if reasoning and reasoning not in ("gpt_oss",):
        fmt = reasoning_format(reasoning)
        pieces += [*fmt.start, *fmt.end, *fmt.implicit_end]
    return st.lists(
        st.one_of(st.sampled_from(pieces), st.sampled_from(NOISE), st.text(max_size=6)),
        max_size=14,
    ).map("".join)


def chunked(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


@pytest.mark.parametrize("tool", sorted(TOOL_EXAMPLES))
def test_no_crash_and_conservation(tool):
    assert tool in tool_parser_names(), f"no {tool} parser registered"
    reasoning = TOOL_EXAMPLES[tool][0]

    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        text=fragments_strategy(tool, reasoning),
        cuts=st.lists(st.integers(0, 400), max_size=12),
        declared=st.booleans(),
    )
    def check(text, cuts, declared):
        make = splitter_factory(reasoning, tool, [WEATHER] if declared else None)
        events = run_chunks(make, chunked(text, cuts))
        check_events(events, text)

    check()


@pytest.mark.parametrize("tool", sorted(TOOL_EXAMPLES))
def test_reference_example_parses_to_the_call(tool):
    assert tool in tool_parser_names(), f"no {tool} parser registered"
    from .support import parse, summary

    reasoning = TOOL_EXAMPLES[tool][0]
    kwargs = (
        {"thinking_enabled": False}
        if reasoning
        in ("deepseek_v3", "deepseek_v3_1", "deepseek_v3_2", "kimi_k25", "minimax_m2", "mistral", "step3p5")
        else {}
    )
    events = parse(splitter_factory(reasoning, tool, [WEATHER], **kwargs), TOOL_EXAMPLES[tool][1])
    assert [s for s in summary(events) if s[0] != "text" or s[1].strip()] == [
        ("call", "get_weather", {"city": "Tokyo", "days": 3})
    ]
