from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["granite4"][1]
granite = splitter_factory(None, "granite4", [WEATHER])


def test_reference_literal_and_prose_around():
    text = "Let me check.\n" + LITERAL + "\n" + LITERAL.replace("Tokyo", "Paris")
    assert summary(parse(granite, text)) == [
        ("text", "Let me check."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
    ]
