from .support import WEATHER, parse, splitter_factory, summary

lfm2 = splitter_factory("qwen3", "lfm2", [WEATHER])


def test_reasoning_text_calls_and_text_after():
    text = (
        "<think>Two cities.</think>Checking [both]. "
        "<|tool_call_start|>[get_weather(city='Tokyo', days=3), get_weather(city=\"Paris\")]<|tool_call_end|>\nDone."
    )
    assert summary(parse(lfm2, text)) == [
        ("reasoning", "Two cities."),
        ("text", "Checking [both]."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris"}),
        ("text", "Done."),
    ]


def test_template_values_json_mappings_and_python_scalars():
    text = (
        '<|tool_call_start|>[get_weather(city=\'Tokyo\', opts={"metric": true, "x": null}, deep=True)]<|tool_call_end|>'
    )
    assert summary(parse(lfm2, text)) == [
        ("call", "get_weather", {"city": "Tokyo", "opts": {"metric": True, "x": None}, "deep": True})
    ]


def test_bare_list_is_prose_and_empty_block_is_syntax():
    assert summary(parse(lfm2, "[get_weather(city='Tokyo')]")) == [("text", "[get_weather(city='Tokyo')]")]
    assert summary(parse(lfm2, "<|tool_call_start|>[]<|tool_call_end|>Nothing to call.")) == [
        ("text", "Nothing to call.")
    ]


def test_json_call_objects_in_the_list():
    text = '<|tool_call_start|>[{"name": "get_weather", "arguments": {"city": "Tokyo"}}, get_weather(city="Paris")]<|tool_call_end|>'
    assert summary(parse(lfm2, text)) == [
        ("call", "get_weather", {"city": "Tokyo"}),
        ("call", "get_weather", {"city": "Paris"}),
    ]


def test_single_json_object_without_a_list():
    # Issue 13 cause 10: one call object where the format's list belongs.
    text = 'Sure. <|tool_call_start|>{"name": "get_weather", "arguments": {"city": "Oslo"}}<|tool_call_end|> Done.'
    assert summary(parse(lfm2, text)) == [
        ("text", "Sure."),
        ("call", "get_weather", {"city": "Oslo"}),
        ("text", "Done."),
    ]


def test_single_json_object_then_junk_before_the_end_token():
    text = '<|tool_call_start|>{"name": "get_weather", "arguments": {"city": "Oslo"}} and more<|tool_call_end|>'
    events = summary(parse(lfm2, text))
    assert events[0] == ("call", "get_weather", {"city": "Oslo"})
    assert all(kind != "call" for kind, *_ in events[1:])
