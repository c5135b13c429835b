from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["spark25"][1]
# Its template opens `<think>` unless thinking is off.
spark = splitter_factory("spark25", "spark25", [WEATHER])


def test_reasoning_then_back_to_back_calls():
    text = "Weather for two.</think>" + LITERAL + LITERAL.replace("Tokyo", "Paris")
    assert summary(parse(spark, text)) == [
        ("reasoning", "Weather for two."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
    ]


def test_thinking_off_answer_and_call():
    off = splitter_factory("spark25", "spark25", [WEATHER], thinking_enabled=False)
    assert summary(parse(off, "Sure. " + LITERAL)) == [
        ("text", "Sure."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_call_without_arguments():
    assert summary(parse(spark, "</think><tool_call>get_weather</tool_call>")) == [("call", "get_weather", {})]
