from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["step3p5"][1]
# The template always ends the prompt with `<think>\n`.
step = splitter_factory("step3p5", "step3p5", [WEATHER])


def test_output_starts_inside_reasoning():
    text = "Need the weather.\n</think>\n" + LITERAL
    assert summary(parse(step, text)) == [
        ("reasoning", "Need the weather."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_call_ends_unclosed_reasoning_and_text_follows():
    text = "Need the weather.\n" + LITERAL + "\nIt is sunny."
    assert summary(parse(step, text)) == [
        ("reasoning", "Need the weather."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("text", "It is sunny."),
    ]


def test_thinking_off_is_plain_text():
    off = splitter_factory("step3p5", "step3p5", [WEATHER], thinking_enabled=False)
    assert summary(parse(off, "Hello.")) == [("text", "Hello.")]
