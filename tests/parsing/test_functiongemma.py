from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["functiongemma"][1]
fg = splitter_factory(None, "functiongemma", [WEATHER])


def test_calls_back_to_back_with_prose():
    assert summary(parse(fg, "Checking." + LITERAL + LITERAL.replace("Tokyo", "Paris"))) == [
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
    ]


def test_markers_inside_an_escaped_string_are_its_text():
    text = "<start_function_call>call:get_weather{city:<escape>a<end_function_call>b<escape>}<end_function_call>"
    assert summary(parse(fg, text)) == [("call", "get_weather", {"city": "a<end_function_call>b"})]


def test_gemma4_tokens_are_text_here_and_a_cut_call_truncated():
    gemma = '<|tool_call>call:get_weather{city:<|"|>Tokyo<|"|>}<tool_call|>'
    assert summary(parse(fg, gemma)) == [("text", gemma)]
    assert summary(parse(fg, LITERAL[: LITERAL.index("Tokyo") + 2])) == [("incomplete", "get_weather", "truncated")]
