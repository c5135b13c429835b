from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["olmo3"][1]
# The Think models' generation prompt ends with `<think>`.
olmo = splitter_factory("olmo3", "olmo3", [WEATHER])


def test_reasoning_then_calls_one_per_line():
    text = 'Two cities.</think>Checking.<function_calls>\nget_weather(city="Tokyo", days=3)\nget_weather(city="Paris")\n</function_calls>'
    assert summary(parse(olmo, text)) == [
        ("reasoning", "Two cities."),
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris"}),
    ]


def test_json_names_as_values():
    text = '</think><function_calls>get_weather(city="Tokyo", metric=true, note=null)</function_calls>'
    assert summary(parse(olmo, text)) == [("call", "get_weather", {"city": "Tokyo", "metric": True, "note": None})]


def test_not_a_call_inside_the_tags_is_text():
    text = "</think><function_calls>\nnothing to call\n</function_calls>"
    assert summary(parse(olmo, text)) == [("text", "<function_calls>\nnothing to call\n</function_calls>")]


def test_thinking_off_and_truncated_call():
    off = splitter_factory("olmo3", "olmo3", [WEATHER], thinking_enabled=False)
    assert summary(parse(off, LITERAL[:30])) == [("incomplete", "get_weather", "truncated")]
