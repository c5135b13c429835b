from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["poolside_v1"][1]
laguna = splitter_factory("qwen3", "poolside_v1", [WEATHER])


def test_prompt_opened_reasoning_then_calls():
    opened = splitter_factory("qwen3", "poolside_v1", [WEATHER], prompt_opened_reasoning=True)
    text = "Two cities.</think>" + LITERAL + LITERAL.replace("Tokyo", "Paris")
    assert summary(parse(opened, text)) == [
        ("reasoning", "Two cities."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
    ]


def test_string_values_keep_their_whitespace():
    text = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>  Tokyo\n</arg_value>\n</tool_call>"
    assert summary(parse(laguna, text)) == [("call", "get_weather", {"city": "  Tokyo\n"})]


def test_name_with_spaces_is_not_a_call():
    text = "<tool_call>get weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
    assert summary(parse(laguna, text)) == [("text", text)]
