"""Calls written in doubled braces, `{{"name": ..., "arguments": {...}}}`: Qwen2.5's
template shows the call shape that way and its models copy it (closing it with two
braces, or with one). Inside `<tool_call>` (hermes), in a final ```json fence and as
the whole output (fenced-call recovery) the object inside is the call; anything
malformed is never dispatched. Every case is parsed split at every character
boundary (support.parse), with conservation and the call-event contract checked,
and hypothesis chunks mixtures of the pieces."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenyard.events import Marker, ToolCallReady, check_events

from .support import WEATHER, merge, parse, run_chunks, splitter_factory, summary

hermes = splitter_factory(None, "hermes", [WEATHER])
recovering = splitter_factory(None, "hermes", [WEATHER], recover_fenced_calls=True)
ARGS = '{"city": "Oslo", "days": 2}'
CALL = ("call", "get_weather", {"city": "Oslo", "days": 2})


@pytest.mark.parametrize(
    "obj",
    [
        f'{{{{"name": "get_weather", "arguments": {ARGS}}}}}',
        f'{{ {{"name": "get_weather", "arguments": {ARGS}}} }}',
        f'{{{{\n  "name": "get_weather",\n  "arguments": {ARGS}\n}}}}',
        f'{{{{"arguments": {ARGS}, "name": "get_weather"}}}}',
        # One closing brace: the shape Qwen2.5-Coder-1.5B wrote in the accuracy run.
        f'{{{{"name": "get_weather", "arguments": {ARGS}}}',
        f'{{{{"name": "get_weather", "arguments": {ARGS}}} ',
    ],
)
def test_doubled_braces_are_one_call(obj):
    assert summary(parse(hermes, f"<tool_call>\n{obj}\n</tool_call>")) == [CALL]
    assert summary(parse(hermes, f"<tool_call>\n{obj}")) == [CALL]  # the output ends in the call
    assert summary(parse(recovering, f"Checking.\n```json\n{obj}\n```\n")) == [("text", "Checking."), CALL]
    assert summary(parse(recovering, f"\n{obj}\n")) == [CALL]  # the whole output, bare


@pytest.mark.parametrize(
    "obj", [f'{{"name": "get_weather", "arguments": {ARGS}}}', f'  {{{{"name": "get_weather", "arguments": {ARGS}}}}}']
)
def test_a_bare_call_object_is_a_call_only_as_the_whole_output(obj):
    assert summary(parse(recovering, obj)) == [CALL]
    assert [k for k, *_ in summary(parse(recovering, f"Here it is: {obj.strip()}"))] == ["text"]
    assert [k for k, *_ in summary(parse(recovering, f"{obj}\nThat is the call."))] == ["text"]
    assert [k for k, *_ in summary(parse(hermes, obj))] == ["text"], "only where the recovery is switched on"


def test_the_call_keeps_its_exact_text():
    obj = f'{{{{"name": "get_weather", "arguments": {ARGS}}}}}'
    ready = next(e for e in parse(recovering, f"```json\n{obj}\n```") if isinstance(e, ToolCallReady))
    assert ready.raw == f"```json\n{obj}\n```" and ready.input() == {"city": "Oslo", "days": 2}
    ready = next(e for e in parse(hermes, f"<tool_call>\n{obj}\n</tool_call>") if isinstance(e, ToolCallReady))
    assert ready.raw == f"<tool_call>\n{obj}"  # the closing marker is syntax, as for any call


MALFORMED = [
    '{{"name": "get_weather", "arguments": {"city": "Oslo"',  # cut short
    '{{"name": "get_weather", "arguments": {"city": Oslo}}}',  # not JSON
    f'{{{{{{"name": "get_weather", "arguments": {ARGS}}}}}}}',  # tripled
    f'{{{{"name": "get_weather", "arguments": {ARGS}}}, "x": 1}}',  # another key outside the call
]


@pytest.mark.parametrize("obj", MALFORMED)
def test_malformed_doubled_braces_are_never_a_call(obj):
    for text in (f"```json\n{obj}\n```", obj):
        assert not any(kind == "call" for kind, *_ in summary(parse(recovering, text)))
    block = summary(parse(hermes, f"<tool_call>\n{obj}\n</tool_call>"))
    assert not any(kind == "call" for kind, *_ in block)


def test_a_brace_too_many_is_read_as_with_single_braces():
    """In a fence the object no longer ends the output as a call: text. In a
    `<tool_call>` block the complete call stands and the stray brace is block
    syntax, as after a single-brace call: the closing tag never becomes text."""
    extra = f'{{{{"name": "get_weather", "arguments": {ARGS}}}}}}}'
    assert [kind for kind, *_ in summary(parse(recovering, f"```json\n{extra}\n```"))] == ["text"]
    assert [kind for kind, *_ in summary(parse(recovering, extra))] == ["text"]
    single = summary(parse(hermes, f'<tool_call>\n{{"name": "get_weather", "arguments": {ARGS}}}}}\n</tool_call>'))
    assert summary(parse(hermes, f"<tool_call>\n{extra}\n</tool_call>")) == single == [CALL]
    after = f'<tool_call>\n{{"name": "get_weather", "arguments": {ARGS}}} }} }}\n</tool_call>Done.'
    assert summary(parse(hermes, after)) == [CALL, ("text", "Done.")]
    markers = [e.text for e in parse(hermes, after) if isinstance(e, Marker)]
    assert "".join(markers).replace(" ", "") == "}}\n</tool_call>"
    # A brace after the block is the model's text, outside any call.
    closed = f'<tool_call>\n{{"name": "get_weather", "arguments": {ARGS}}}\n</tool_call>}}'
    assert summary(parse(hermes, closed)) == [CALL, ("text", "}")]


def test_an_undeclared_tool_is_read_as_with_single_braces():
    """Fenced recovery takes declared tools only; a `<tool_call>` block reports the
    call with `declared` False, as with single braces (the API decides)."""
    doubled = f'{{{{"name": "send_mail", "arguments": {ARGS}}}}}'
    assert [kind for kind, *_ in summary(parse(recovering, f"```json\n{doubled}\n```"))] == ["text"]
    single = summary(parse(hermes, f'<tool_call>\n{{"name": "send_mail", "arguments": {ARGS}}}\n</tool_call>'))
    assert summary(parse(hermes, f"<tool_call>\n{doubled}\n</tool_call>")) == single


def test_single_braces_are_unchanged():
    obj = f'{{"name": "get_weather", "arguments": {ARGS}}}'
    assert summary(parse(hermes, f"<tool_call>\n{obj}\n</tool_call>")) == [CALL]
    assert summary(parse(recovering, f"```json\n{obj}\n```")) == [CALL]
    # A fence that shows the shape and has text after it stays text.
    shown = f'```json\n{{{{"name": "get_weather", "arguments": {ARGS}}}}}\n```\nThen run it.'
    assert [kind for kind, *_ in summary(parse(recovering, shown))] == ["text"]


PIECES = [
    "<tool_call>\n",
    "\n</tool_call>",
    "```json\n",
    "\n```",
    "{{",
    "}}",
    "{",
    "}",
    " ",
    '"name": "get_weather"',
    '"arguments": ',
    ARGS,
    ", ",
    '"x"',
    "text",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.lists(st.sampled_from(PIECES), max_size=14).map("".join),
    cuts=st.lists(st.integers(0, 400), max_size=10),
    fenced=st.booleans(),
)
def test_any_text_any_chunking(text, cuts, fenced):
    make = recovering if fenced else hermes
    points = sorted({c % (len(text) + 1) for c in cuts})
    bounds = [0, *points, len(text)]
    chunks = [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]
    events = run_chunks(make, chunks)
    check_events(events, text)
    assert merge(events) == merge(run_chunks(make, [text])), "the chunking changed the events"
    for event in events:
        if isinstance(event, ToolCallReady):  # only well-formed calls to the declared tool
            assert event.name == "get_weather" and isinstance(event.input(), dict)
