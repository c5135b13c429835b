from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["hunyuan_a13b"][1]
a13b = splitter_factory("hunyuan_a13b", "hunyuan_a13b", [WEATHER])


def test_think_then_answer_tags_then_calls():
    text = "<think>\nNeed weather.\n</think>\n<answer>\n" + LITERAL + "\n</answer>"
    assert summary(parse(a13b, text)) == [
        ("reasoning", "Need weather."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_answer_text_without_its_tags():
    text = "<think>\n\n</think>\n<answer>\nIt is sunny.\n</answer>"
    assert summary(parse(a13b, text)) == [("text", "It is sunny.")]
