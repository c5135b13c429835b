from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["granite"][1]
granite = splitter_factory(None, "granite", [WEATHER])


def test_token_and_plain_text_markers():
    text = '<tool_call>[{"name": "get_weather", "arguments": {"city": "A"}}, {"name": "get_weather", "arguments": {"city": "B"}}]'
    assert summary(parse(granite, LITERAL)) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    assert summary(parse(granite, "Sure. " + text)) == [
        ("text", "Sure."),
        ("call", "get_weather", {"city": "A"}),
        ("call", "get_weather", {"city": "B"}),
    ]
