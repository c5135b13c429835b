from tokenyard.events import Marker

from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["plamo3"][1]
plamo = splitter_factory("plamo3", "plamo3", [WEATHER])
END_THINK = "<|plamo:end_think:plamo|>"


def test_reasoning_text_and_two_requests():
    request = LITERAL.split("<|plamo:begin_tool_requests:plamo|>")[1].split("<|plamo:end_tool_requests:plamo|>")[0]
    two = "<|plamo:begin_tool_requests:plamo|>" + request + request.replace("Tokyo", "Paris")
    text = "Two cities." + END_THINK + "Checking." + two + "<|plamo:end_tool_requests:plamo|><|plamo:tag|>"
    assert summary(parse(plamo, text)) == [
        ("reasoning", "Two cities."),
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
    ]


def test_requests_end_unclosed_reasoning():
    assert summary(parse(plamo, "Look it up." + LITERAL)) == [
        ("reasoning", "Look it up."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_end_of_turn_token_is_syntax_and_thinking_off_is_text():
    off = splitter_factory("plamo3", "plamo3", [WEATHER], thinking_enabled=False)
    assert summary(parse(off, "Hello.<|plamo:tag|>")) == [("text", "Hello.")]


def test_end_of_turn_token_inside_reasoning_is_syntax_and_ends_it():
    # vLLM's plamo3 reasoning tests end the turn mid-thought; the token never
    # becomes reasoning text, and what follows it is outside the message.
    events = parse(plamo, "Thinking<|plamo:tag|>more")
    assert summary(events) == [("reasoning", "Thinking")]
    assert [e.text for e in events if isinstance(e, Marker)] == ["<|plamo:tag|>more"]


def test_the_end_of_turn_token_ends_the_message_and_cuts_an_open_call():
    assert summary(parse(plamo, END_THINK + "Answer.<|plamo:tag|>later text")) == [("text", "Answer.")]
    assert summary(parse(plamo, END_THINK + LITERAL[:-120] + "<|plamo:tag|>tail")) == [
        ("incomplete", "get_weather", "truncated")
    ]


def test_cut_inside_the_arguments_is_incomplete():
    assert summary(parse(plamo, END_THINK + LITERAL[:-120])) == [("incomplete", "get_weather", "truncated")]
