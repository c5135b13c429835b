import json

import pytest

from tokenyard.events import Marker, ToolCallReady, ToolCallStart

from .support import WEATHER, parse, splitter_factory, summary

BEGIN, END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL, SEP, CALL_END = "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>"
LITERAL = BEGIN + CALL + "get_weather" + SEP + '{"city":"Tokyo","days":3}' + CALL_END + END
v31 = splitter_factory(None, "deepseek_v3_1", [WEATHER])
v31_thinking = splitter_factory("deepseek_v3_1", "deepseek_v3_1", [WEATHER])


def call(arguments: str, name: str = "get_weather") -> str:
    return CALL + name + SEP + arguments + CALL_END


def readies(events):
    return [e for e in events if isinstance(e, ToolCallReady)]


def test_reference_literal():
    events = parse(v31, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = readies(events)[0]
    assert ready.arguments == '{"city":"Tokyo","days":3}'
    assert ready.raw == call('{"city":"Tokyo","days":3}')
    assert [e.text for e in events if isinstance(e, Marker)] == [BEGIN, END]


def test_prose_then_several_calls_in_one_section():
    calls = call('{"city":"Tokyo"}') + "\n" + call('{"city":"Paris","days":2}')
    text = "Checking both.\n" + BEGIN + calls + END + "\nDone."
    assert summary(parse(v31, text)) == [
        ("text", "Checking both."),
        ("call", "get_weather", {"city": "Tokyo"}),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
        ("text", "Done."),
    ]


def test_no_arguments_at_all_is_an_empty_object():
    events = parse(v31, BEGIN + call("") + END)
    assert summary(events) == [("call", "get_weather", {})]
    assert readies(events)[0].arguments == "{}"


def test_raw_newline_inside_string_is_escaped():
    events = parse(v31, BEGIN + call('{"city": "a\nb"}') + END)
    assert readies(events)[0].arguments == '{"city": "a\\nb"}'


def test_invalid_arguments_then_a_good_call():
    text = BEGIN + call('{"city": "Tokyo",}') + call('{"city": "Oslo"}') + END + "after"
    assert summary(parse(v31, text)) == [
        ("incomplete", "get_weather", "invalid_arguments"),
        ("call", "get_weather", {"city": "Oslo"}),
        ("text", "after"),
    ]


def test_text_after_the_arguments_is_invalid():
    text = BEGIN + call('{"city": "Tokyo"}}') + END
    assert summary(parse(v31, text)) == [("incomplete", "get_weather", "invalid_arguments")]


def test_end_token_inside_a_string_is_the_strings_text():
    # Only the closing quote ends a JSON string: an unterminated string runs to the
    # end of output, and the call is never dispatched.
    text = BEGIN + call('{"city": "Tok') + END + "Done."
    assert summary(parse(v31, text)) == [("incomplete", "get_weather", "truncated")]
    value = "a <｜tool▁call▁end｜><｜tool▁calls▁end｜> b"
    text = BEGIN + call(json.dumps({"city": value}, ensure_ascii=False)) + END
    assert summary(parse(v31, text)) == [("call", "get_weather", {"city": value})]


def test_missing_call_end_before_the_next_call():
    text = BEGIN + CALL + "get_weather" + SEP + '{"city":"Tokyo"}' + call('{"city":"Oslo"}') + END
    assert summary(parse(v31, text)) == [
        ("call", "get_weather", {"city": "Tokyo"}),
        ("call", "get_weather", {"city": "Oslo"}),
    ]


def test_call_without_section_opener():
    text = "Sure. " + call('{"city":"Tokyo"}') + " ok"
    assert summary(parse(v31, text)) == [("text", "Sure."), ("call", "get_weather", {"city": "Tokyo"}), ("text", "ok")]


@pytest.mark.parametrize(
    "text",
    [
        BEGIN + CALL + "get the weather" + SEP + "{}" + CALL_END + END,
        "Use " + CALL + " to begin a call.",
    ],
)
def test_not_a_call_is_text(text):
    events = parse(v31, text)
    assert not [e for e in events if isinstance(e, ToolCallStart)]
    assert "".join(e.text for e in events if not isinstance(e, Marker)) == text


def test_forced_reasoning_then_text_then_call():
    text = "The user wants Tokyo.</think>Let me check." + LITERAL
    assert summary(parse(v31_thinking, text)) == [
        ("reasoning", "The user wants Tokyo."),
        ("text", "Let me check."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_call_section_inside_reasoning_ends_it():
    text = "I need the weather." + LITERAL + "It is sunny."
    assert summary(parse(v31_thinking, text)) == [
        ("reasoning", "I need the weather."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("text", "It is sunny."),
    ]


@pytest.mark.parametrize("tail", ["", "<｜tool▁call"])
def test_complete_call_at_end_of_output_without_its_end_token_is_recovered(tail):
    text = BEGIN + CALL + "get_weather" + SEP + '{"city":"Tokyo"}' + tail
    events = parse(v31, text)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo"})]


def test_cut_arguments_at_end_of_output_are_never_a_call():
    events = parse(v31, BEGIN + CALL + "get_weather" + SEP + '{"city":"To')
    assert summary(events) == [("incomplete", "get_weather", "truncated")]


def test_a_section_opener_followed_by_no_call_is_text_whole():
    # No call follows, so the block is no call section: it is the model's text as
    # written, opener included (vLLM's unparsable-block cases).
    events = parse(v31, BEGIN + "I would call a tool here.")
    assert not [e for e in events if isinstance(e, ToolCallStart)]
    assert "".join(e.text for e in events if not isinstance(e, Marker)) == BEGIN + "I would call a tool here."


EOS = "<｜end▁of▁sentence｜>"


def test_end_of_sentence_token_is_a_marker_not_text():
    # Handed a whole output (the engine normally stops on it), the token is syntax.
    events = parse(v31, "Here.\n" + BEGIN + call('{"city":"Tokyo"}') + END + EOS)
    assert summary(events) == [("text", "Here."), ("call", "get_weather", {"city": "Tokyo"})]
    assert "".join(e.text for e in events if isinstance(e, Marker)).endswith(EOS)


def test_end_of_sentence_token_inside_a_string_argument_is_the_arguments_text():
    arguments = {"city": "a " + EOS + " b"}
    events = parse(v31, BEGIN + call(json.dumps(arguments, ensure_ascii=False)) + END)
    assert summary(events) == [("call", "get_weather", arguments)]
