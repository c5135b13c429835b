import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenyard.events import Marker, ToolCallReady, check_events

from .support import WEATHER, merge, parse, run_chunks, splitter_factory, summary

LITERAL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}\n</tool_call>'
hermes = splitter_factory(None, "hermes", [WEATHER])


def test_reference_literal():
    events = parse(hermes, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = [e for e in events if isinstance(e, ToolCallReady)][0]
    assert ready.arguments == '{"city": "Tokyo", "days": 3}'
    assert ready.raw == LITERAL[: LITERAL.index("}}") + 2]


def test_prose_then_several_calls():
    text = "Let me check both.\n\n" + LITERAL + "\n" + LITERAL.replace("Tokyo", "Paris") + "\nDone."
    assert summary(parse(hermes, text)) == [
        ("text", "Let me check both."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
        ("text", "Done."),
    ]


def test_arguments_before_name_and_parameters_key():
    text = '<tool_call>{"parameters": {"city": "Oslo"}, "name": "get_weather"}</tool_call>'
    assert summary(parse(hermes, text)) == [("call", "get_weather", {"city": "Oslo"})]


def test_raw_newline_inside_string_is_escaped():
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "a\nb"}}</tool_call>'
    events = parse(hermes, text)
    ready = [e for e in events if isinstance(e, ToolCallReady)][0]
    assert ready.arguments == '{"city": "a\\nb"}'
    assert ready.input() == {"city": "a\nb"}


def test_not_a_call_is_text():
    text = "<tool_call>I will call the tool now</tool_call> ok"
    assert summary(parse(hermes, text)) == [("text", text)]


def test_invalid_arguments_are_reported_not_dispatched():
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Tokyo",}}</tool_call>after'
    assert summary(parse(hermes, text)) == [("incomplete", "get_weather", "invalid_arguments"), ("text", "after")]


@pytest.mark.parametrize(
    ("value", "arguments"),
    [
        ('{"city": "Oslo"}', '{"city": "Oslo"}'),  # Granite 4 serializes its arguments: the object is meant
        ("hello", '"hello"'),
        ("{not json}", '"{not json}"'),
        ('{"a": 1} tail', '"{\\"a\\": 1} tail"'),
        ("[1, 2]", '"[1, 2]"'),
    ],
)
def test_arguments_written_as_a_string(value, arguments):
    import json

    text = "<tool_call>" + json.dumps({"name": "get_weather", "arguments": value}) + "</tool_call>"
    ready = [e for e in parse(hermes, text) if isinstance(e, ToolCallReady)][0]  # every chunking agrees
    assert ready.arguments == arguments


def test_several_call_objects_in_one_block():
    # SGLang's base-detector tests: `{...}, {...}` inside one <tool_call>.
    second = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Tokyo"}}, ' + second + " </tool_call>"
    assert summary(parse(hermes, text)) == [
        ("call", "get_weather", {"city": "Tokyo"}),
        ("call", "get_weather", {"city": "Paris"}),
    ]
    assert summary(parse(hermes, text.replace(", " + second, ", not a call"))) == [
        ("call", "get_weather", {"city": "Tokyo"}),
        ("text", ", not a call </tool_call>"),
    ]


PARIS = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
OSLO = '{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}'


def test_a_list_of_calls_in_one_block():
    # Qwen 2.5-family models (SGLang reads each object as a call).
    text = "Both.\n<tool_call>\n[" + PARIS + ", " + OSLO + "]\n</tool_call>\nDone."
    events = parse(hermes, text)
    assert summary(events) == [
        ("text", "Both."),
        ("call", "get_weather", {"city": "Paris"}),
        ("call", "get_weather", {"city": "Oslo", "days": 2}),
        ("text", "Done."),
    ]
    # Each call's raw is exactly its object; `[`, the separator and `]` are syntax.
    assert [e.raw for e in events if isinstance(e, ToolCallReady)] == [PARIS, OSLO]
    assert [e.text for e in events if isinstance(e, Marker)] == ["\n<tool_call>\n[", ", ", "]\n</tool_call>\n"]


def test_a_list_entry_that_is_not_a_call_ends_the_list():
    # The calls before it stand; the rest of the block is text (as for json_call_list.py).
    text = "<tool_call>\n[" + PARIS + ', "junk", ' + OSLO + "]\n</tool_call>"
    assert summary(parse(hermes, text)) == [
        ("call", "get_weather", {"city": "Paris"}),
        ("text", ', "junk", ' + OSLO + "]\n</tool_call>"),
    ]


@pytest.mark.parametrize("inside", ["[1, 2]", '[{"city": "Paris"}]', '["get_weather"]', "[ note"])
def test_a_list_that_is_not_calls_is_text(inside):
    text = "<tool_call>\n" + inside + "\n</tool_call> ok"
    assert summary(parse(hermes, text)) == [("text", text)]


def test_a_broken_call_in_a_list_fails_to_the_closing_marker():
    text = '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris",}}, ' + OSLO + "]</tool_call>after"
    assert summary(parse(hermes, text)) == [("incomplete", "get_weather", "invalid_arguments"), ("text", "after")]


def test_a_list_cut_by_the_end_of_output():
    assert summary(parse(hermes, "<tool_call>\n[" + PARIS)) == [("call", "get_weather", {"city": "Paris"})]
    assert summary(parse(hermes, "<tool_call>\n[" + PARIS[:-3])) == [("incomplete", "get_weather", "truncated")]


@pytest.mark.parametrize("family", ["ernie45", "internlm", "granite4", "longcat"])
def test_the_family_reads_lists_too(family):
    opening, closing = {
        "internlm": ("<|action_start|><|plugin|>", "<|action_end|>"),
        "longcat": ("<longcat_tool_call>", "</longcat_tool_call>"),
    }.get(family, ("<tool_call>", "</tool_call>"))
    text = opening + "\n[" + PARIS + ",\n " + OSLO + "]\n" + closing
    assert summary(parse(splitter_factory(None, family, [WEATHER]), text)) == [
        ("call", "get_weather", {"city": "Paris"}),
        ("call", "get_weather", {"city": "Oslo", "days": 2}),
    ]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=80, deadline=None)
@given(
    calls=st.lists(st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=3), min_size=1, max_size=3),
    spacing=st.sampled_from(["", " ", "\n", "\n  "]),
    cuts=st.lists(st.integers(0, 2000), max_size=10),
)
def test_any_list_of_calls_streams_to_its_calls(calls, spacing, cuts):
    objects = [json.dumps({"name": "get_weather", "arguments": arguments}) for arguments in calls]
    text = "<tool_call>" + spacing + "[" + (", " + spacing).join(objects) + "]" + spacing + "</tool_call>"
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    bounds = [0, *points, len(text)]
    events = run_chunks(hermes, [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a])
    check_events(events, text)
    ready = [e for e in merge(events) if isinstance(e, ToolCallReady)]
    assert [e.input() for e in ready] == calls
    assert [e.raw for e in ready] == objects
