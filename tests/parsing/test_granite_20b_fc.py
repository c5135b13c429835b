from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["granite_20b_fc"][1]
fc = splitter_factory(None, "granite-20b-fc", [WEATHER])


def test_one_marker_per_call():
    text = "Sure. " + LITERAL + "\n" + LITERAL.replace("Tokyo", "Paris")
    assert summary(parse(fc, text)) == [
        ("text", "Sure."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
    ]


def test_not_json_after_the_marker_is_text_and_a_cut_call_incomplete():
    assert summary(parse(fc, "<function_call> maybe later")) == [("text", "<function_call> maybe later")]
    assert summary(parse(fc, LITERAL[:50])) == [("incomplete", "get_weather", "truncated")]
