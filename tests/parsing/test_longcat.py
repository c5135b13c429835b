from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["longcat"][1]
longcat = splitter_factory(None, "longcat", [WEATHER])


def test_back_to_back_calls_with_prose():
    text = "Checking both.\n" + LITERAL + LITERAL.replace("Tokyo", "Paris") + "\nDone."
    assert summary(parse(longcat, text)) == [
        ("text", "Checking both."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
        ("text", "Done."),
    ]


def test_plain_tool_call_tag_is_text():
    text = '<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>'
    assert summary(parse(longcat, text)) == [("text", text)]


def test_truncated_call_is_incomplete():
    assert summary(parse(longcat, LITERAL[:50])) == [("incomplete", "get_weather", "truncated")]
