from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["apertus"][1]
apertus = splitter_factory("apertus", "apertus", [WEATHER])


def test_function_name_as_key_two_calls():
    text = '<|tools_prefix|>[{"get_weather": {"city": "Tokyo", "days": 3}}, {"get_weather": {"city": "Paris"}}]<|tools_suffix|>'
    assert summary(parse(apertus, "Checking. " + text)) == [
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris"}),
    ]


def test_inner_reasoning_and_a_call_inside_it():
    text = "<|inner_prefix|>Need the weather." + LITERAL
    assert summary(parse(apertus, text)) == [
        ("reasoning", "Need the weather."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]
    assert summary(parse(apertus, "<|inner_prefix|>Easy.<|inner_suffix|>Sunny.")) == [
        ("reasoning", "Easy."),
        ("text", "Sunny."),
    ]


def test_a_call_whose_arguments_are_not_an_object_fails_and_keeps_its_text():
    # The generic `{"name": ...}` shape reads as a call to `name`: a special token
    # opened the list, so it is a broken call (its text stays), never a guess.
    for text in (
        '<|tools_prefix|>[{"name": "get_weather"}]',
        '<|tools_prefix|>[{"get_weather": "Tokyo"}]<|tools_suffix|>',
    ):
        events = parse(apertus, text)
        assert [s[0] for s in summary(events)] == ["incomplete"]
        assert summary(events)[0][2] == "invalid_arguments"
    assert summary(parse(apertus, "<|tools_prefix|>maybe")) == [("text", "<|tools_prefix|>maybe")]


def test_cut_arguments_are_truncated():
    assert summary(parse(apertus, LITERAL[:35])) == [("incomplete", "get_weather", "truncated")]
