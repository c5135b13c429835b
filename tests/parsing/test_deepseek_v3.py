import pytest

from tokenyard.events import Marker, ToolCallReady, ToolCallStart

from .support import WEATHER, parse, splitter_factory, summary

BEGIN, END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL, SEP, CALL_END = "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>"
LITERAL = BEGIN + CALL + "function" + SEP + 'get_weather\n```json\n{"city":"Tokyo","days":3}\n```' + CALL_END + END
v3 = splitter_factory(None, "deepseek_v3", [WEATHER])
r1 = splitter_factory("deepseek_v3", "deepseek_v3", [WEATHER])


def call(arguments: str, name: str = "get_weather") -> str:
    return CALL + "function" + SEP + name + "\n```json\n" + arguments + "\n```" + CALL_END


def readies(events):
    return [e for e in events if isinstance(e, ToolCallReady)]


def test_reference_literal():
    events = parse(v3, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = readies(events)[0]
    assert ready.arguments == '{"city":"Tokyo","days":3}'
    assert ready.raw == call('{"city":"Tokyo","days":3}')
    assert [e.text for e in events if isinstance(e, Marker)] == [BEGIN, END]


def test_prose_then_several_calls_separated_by_newlines():
    calls = call('{"city":"Tokyo"}') + "\n" + call('{"city":"Paris","days":2}')
    text = "Checking.\n\n" + BEGIN + calls + END + "\nDone."
    assert summary(parse(v3, text)) == [
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Tokyo"}),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
        ("text", "Done."),
    ]


@pytest.mark.parametrize("fence", ["```json\n", "```\n", ""])
def test_fence_is_optional(fence):
    arguments = fence + '{"city":"Oslo"}' + ("\n```" if fence else "")
    text = BEGIN + CALL + "function" + SEP + "get_weather\n" + arguments + CALL_END + END
    events = parse(v3, text)
    assert summary(events) == [("call", "get_weather", {"city": "Oslo"})]
    assert readies(events)[0].arguments == '{"city":"Oslo"}'


def test_invalid_arguments_then_a_good_call():
    text = BEGIN + call('{"city": Tokyo}') + "\n" + call('{"city": "Oslo"}') + END + "after"
    assert summary(parse(v3, text)) == [
        ("incomplete", "get_weather", "invalid_arguments"),
        ("call", "get_weather", {"city": "Oslo"}),
        ("text", "after"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        BEGIN + CALL + "function" + SEP + "get the weather\n{}" + CALL_END + END,
    ],
)
def test_not_a_call_is_text(text):
    events = parse(v3, text)
    assert not [e for e in events if isinstance(e, ToolCallStart)]
    assert "".join(e.text for e in events if not isinstance(e, Marker)) == text


def test_forced_reasoning_then_text_then_call():
    text = "Tokyo, three days.</think>\n\nOne moment." + LITERAL
    assert summary(parse(r1, text)) == [
        ("reasoning", "Tokyo, three days."),
        ("text", "One moment."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_a_section_opener_followed_by_no_call_is_text_whole():
    # No call follows, so the block is no call section: the model's text as written.
    events = parse(v3, BEGIN + "no call here")
    assert not [e for e in events if isinstance(e, ToolCallStart)]
    assert "".join(e.text for e in events if not isinstance(e, Marker)) == BEGIN + "no call here"


def test_end_of_sentence_token_is_a_marker_not_text():
    # Handed a whole output (the engine normally stops on it), the token is syntax.
    eos = "<｜end▁of▁sentence｜>"
    events = parse(v3, "Here.\n" + BEGIN + call('{"city":"Tokyo"}') + END + eos)
    assert summary(events) == [("text", "Here."), ("call", "get_weather", {"city": "Tokyo"})]
    assert "".join(e.text for e in events if isinstance(e, Marker)).endswith(eos)
