from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["ernie45"][1]
ernie = splitter_factory("ernie45", "ernie45", [WEATHER])


def test_output_starts_inside_reasoning_then_calls():
    assert summary(parse(ernie, "Weather lookup.\n</think>\n\n" + LITERAL + LITERAL.replace("Tokyo", "Paris"))) == [
        ("reasoning", "Weather lookup."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
    ]


def test_answer_in_response_tags():
    assert summary(parse(ernie, "abc\n</think>\n\n<response>\ndef\n</response>\n")) == [
        ("reasoning", "abc"),
        ("text", "def"),
    ]


def test_thinking_off_is_text_and_a_cut_call_is_incomplete():
    off = splitter_factory("ernie45", "ernie45", [WEATHER], thinking_enabled=False)
    assert summary(parse(off, "Hello.")) == [("text", "Hello.")]
    assert summary(parse(off, LITERAL[:45])) == [("incomplete", "get_weather", "truncated")]
