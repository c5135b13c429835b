from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

FB = "\uff5c"
LITERAL = TOOL_EXAMPLES["deepseek_v41"][1]
v41 = splitter_factory("deepseek_v41", "deepseek_v41", [WEATHER])


def test_reasoning_then_spaced_dsml_block():
    assert summary(parse(v41, "<think>Weather.</think>" + LITERAL)) == [
        ("reasoning", "Weather."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_a_bare_invoke_ends_unclosed_reasoning():
    invoke = LITERAL[LITERAL.index(f"<{FB}DSML{FB} invoke") : LITERAL.index(f"</{FB}DSML{FB} calls>")]
    assert summary(parse(v41, "<think>Weather." + invoke)) == [
        ("reasoning", "Weather."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_v4_spelling_is_text_here_and_a_cut_value_truncated():
    v4 = LITERAL.replace(f"{FB}DSML{FB} ", f"{FB}DSML{FB}").replace(" calls>", "tool_calls>")
    assert summary(parse(v41, v4)) == [("text", v4)]
    assert summary(parse(v41, LITERAL[: LITERAL.index("Tokyo") + 2])) == [("incomplete", "get_weather", "truncated")]


def test_the_end_of_sentence_token_is_a_marker_not_text():
    assert summary(parse(v41, "</think>Done.<｜end▁of▁sentence｜>")) == [("text", "Done.")]
