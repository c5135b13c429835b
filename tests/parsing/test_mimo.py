from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["mimo"][1]
mimo = splitter_factory("mimo", "mimo", [WEATHER])


def test_own_think_tags_are_syntax():
    assert summary(parse(mimo, "<think>Need weather.</think>\n" + LITERAL)) == [
        ("reasoning", "Need weather."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_string_values_are_verbatim():
    text = "</think>" + LITERAL.replace(">Tokyo<", ">\nTokyo\n<")
    assert summary(parse(mimo, text)) == [("call", "get_weather", {"city": "\nTokyo\n", "days": 3})]


def test_thinking_off_text_then_call():
    off = splitter_factory("mimo", "mimo", [WEATHER], thinking_enabled=False)
    assert summary(parse(off, "Checking.\n" + LITERAL)) == [
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]
