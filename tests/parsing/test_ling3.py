from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["ling3"][1]
# The generation prompt ends with `<think>` while thinking is on (the default).
ling = splitter_factory("ling3", "ling3", [WEATHER])


def test_output_starts_inside_reasoning_then_calls():
    paris = LITERAL.replace("Tokyo", "Paris").replace(">3<", ">2<")
    text = "Two cities to check.</think>Checking.\n" + LITERAL + "\n" + paris
    assert summary(parse(ling, text)) == [
        ("reasoning", "Two cities to check."),
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
    ]


def test_call_ends_unclosed_reasoning():
    assert summary(parse(ling, "Look it up.\n" + LITERAL)) == [
        ("reasoning", "Look it up."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_thinking_off_is_plain_text():
    off = splitter_factory("ling3", "ling3", [WEATHER], thinking_enabled=False)
    assert summary(parse(off, "Hello.")) == [("text", "Hello.")]


def test_truncated_value_is_incomplete():
    cut = LITERAL.index("Tokyo") + 3
    assert summary(parse(ling, "</think>" + LITERAL[:cut])) == [("incomplete", "get_weather", "truncated")]
