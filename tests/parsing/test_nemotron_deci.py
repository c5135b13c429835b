import json

from tokenyard.events import Marker, ToolCallIncomplete, ToolCallReady

from .support import WEATHER, parse, splitter_factory, summary

LITERAL = '<TOOLCALL>[{"name":"get_weather","arguments":{"city":"Tokyo","days":3}}]</TOOLCALL>'
deci = splitter_factory(None, "nemotron_deci", [WEATHER])
deci_thinking = splitter_factory("nemotron_deci", "nemotron_deci", [WEATHER])


def section(*calls: dict) -> str:
    return "<TOOLCALL>" + json.dumps(list(calls), ensure_ascii=False) + "</TOOLCALL>"


def test_reference_literal():
    events = parse(deci, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = [e for e in events if isinstance(e, ToolCallReady)][0]
    assert ready.arguments == '{"city":"Tokyo","days":3}'
    # `<TOOLCALL>` is plain text to the tokenizer: it goes with the list's first call.
    assert ready.raw == '<TOOLCALL>[{"name":"get_weather","arguments":{"city":"Tokyo","days":3}}'
    assert [e.text for e in events if isinstance(e, Marker)] == ["]</TOOLCALL>"]


def test_several_calls_with_prose_around():
    text = (
        "Checking both.\n"
        + section(
            {"name": "get_weather", "arguments": {"city": "Tokyo"}},
            {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}},
        )
        + "\nDone."
    )
    events = parse(deci, text)
    assert summary(events) == [
        ("text", "Checking both."),
        ("call", "get_weather", {"city": "Tokyo"}),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
        ("text", "Done."),
    ]
    assert [e.text for e in events if isinstance(e, Marker)] == ["\n", ", ", "]</TOOLCALL>\n"]


def test_missing_bracket_before_closing_tag():
    text = '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Oslo"}}</TOOLCALL> ok'
    assert summary(parse(deci, text)) == [("call", "get_weather", {"city": "Oslo"}), ("text", "ok")]


def test_not_a_call_is_text():
    for text in [
        "<TOOLCALL>I would call it</TOOLCALL>",
        '<TOOLCALL>[{"city": "Tokyo"}]</TOOLCALL>',
    ]:
        assert summary(parse(deci, text)) == [("text", text)]


def test_invalid_arguments_skip_to_the_closing_tag():
    text = '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": Tokyo}}]</TOOLCALL>after'
    events = parse(deci, text)
    assert summary(events) == [("incomplete", "get_weather", "invalid_arguments"), ("text", "after")]
    # The call is never delivered: the Chat message shows all of its text.
    assert events[-2].raw == '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": Tokyo}}]</TOOLCALL>'


def test_a_broken_call_after_a_delivered_one_keeps_the_separator_as_syntax():
    ok = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    text = f'<TOOLCALL>[{ok}, {{"name": "get_weather", "arguments": {{"city": Rome}}}}]</TOOLCALL>'
    events = parse(deci, text)
    assert summary(events) == [
        ("call", "get_weather", {"city": "Oslo"}),
        ("incomplete", "get_weather", "invalid_arguments"),
    ]
    assert [e.raw for e in events if isinstance(e, ToolCallIncomplete)] == [
        '{"name": "get_weather", "arguments": {"city": Rome}}]</TOOLCALL>'
    ]


def test_interleaved_with_reasoning_in_order():
    text = (
        "<think>\nTokyo first.\n</think>\n"
        + LITERAL
        + "\n<think>\nNow Paris.\n</think>\n"
        + LITERAL.replace("Tokyo", "Paris")
        + "\nBoth done."
    )
    assert summary(parse(deci_thinking, text)) == [
        ("reasoning", "Tokyo first."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Now Paris."),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
        ("text", "Both done."),
    ]


def test_call_inside_reasoning_ends_it():
    text = "<think>\nI should call it.\n" + LITERAL + "\n</think>\n\nDone."
    assert summary(parse(deci_thinking, text)) == [
        ("reasoning", "I should call it."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("text", "Done."),
    ]


def test_an_empty_closed_list_is_syntax_without_calls():
    # Dynamo's test_parallel_empty_array: nothing to call, and nothing to show.
    assert summary(parse(deci, "<TOOLCALL>[]</TOOLCALL>")) == []
    assert summary(parse(deci, "<TOOLCALL>[] and more")) == [("text", "<TOOLCALL>[] and more")]
