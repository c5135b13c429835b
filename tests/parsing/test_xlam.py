from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["xlam"][1]
xlam = splitter_factory(None, "xlam", [WEATHER])
TOKYO = ("call", "get_weather", {"city": "Tokyo", "days": 3})


def test_bare_list_as_the_answer():
    assert summary(parse(xlam, LITERAL)) == [TOKYO]


def test_markers_and_their_closing_tags():
    for text in (
        "Checking.[TOOL_CALLS]" + LITERAL,
        "Checking.<tool_call>" + LITERAL + "</tool_call>",
        "Checking.\n```json\n" + LITERAL + "\n```",
    ):
        assert summary(parse(xlam, text)) == [("text", "Checking."), TOKYO], text


def test_brackets_in_prose_stay_text():
    text = 'See [1], [the docs](x) and [{"name": "other", "arguments": {}}].'
    assert summary(parse(xlam, text)) == [("text", text)]
