from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["internlm"][1]
intern = splitter_factory("qwen3", "internlm", [WEATHER])


def test_action_blocks_with_and_without_the_space():
    spaced = LITERAL.replace("<|action_start|><|plugin|>", "<|action_start|> <|plugin|>").replace("Tokyo", "Paris")
    assert summary(parse(intern, "Checking." + LITERAL + spaced)) == [
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
    ]


def test_arguments_key_and_reasoning_first():
    text = '<think>Weather.</think><|action_start|><|plugin|>\n{"name": "get_weather", "arguments": {"city": "A"}}<|action_end|>'
    assert summary(parse(intern, text)) == [("reasoning", "Weather."), ("call", "get_weather", {"city": "A"})]


def test_not_a_plugin_call_is_text_and_a_cut_one_incomplete():
    assert summary(parse(intern, "<|action_start|><|interpreter|>print(1)<|action_end|>")) == [
        ("text", "<|action_start|><|interpreter|>print(1)<|action_end|>")
    ]
    assert summary(parse(intern, LITERAL[:60])) == [("incomplete", "get_weather", "truncated")]
