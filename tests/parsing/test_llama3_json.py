from tokenyard.events import Marker, ToolCallReady

from .support import WEATHER, parse, splitter_factory, summary

LITERAL = '<|python_tag|>{"name":"get_weather","parameters":{"city":"Tokyo","days":3}}'
llama = splitter_factory(None, "llama3_json", [WEATHER])
llama_thinking = splitter_factory("basic", "llama3_json", [WEATHER])


def test_reference_literal():
    events = parse(llama, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = [e for e in events if isinstance(e, ToolCallReady)][0]
    assert ready.arguments == '{"city":"Tokyo","days":3}'
    assert ready.raw == '{"name":"get_weather","parameters":{"city":"Tokyo","days":3}}'
    assert [e.text for e in events if isinstance(e, Marker)] == ["<|python_tag|>"]


def test_bare_json_at_the_start_of_the_output():
    text = '\n{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}'
    assert summary(parse(llama, text)) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]


def test_bare_json_after_reasoning_opens_the_output():
    text = '<think>\nweather?\n</think>\n{"name": "get_weather", "parameters": {"city": "Tokyo"}}'
    assert summary(parse(llama_thinking, text)) == [
        ("reasoning", "weather?"),
        ("call", "get_weather", {"city": "Tokyo"}),
    ]


def test_json_later_in_prose_is_text():
    text = 'Example: {"name": "get_weather", "parameters": {}}'
    assert summary(parse(llama, text)) == [("text", text)]


def test_several_calls_separated_by_semicolons_after_prose():
    text = (
        'Let me check.<|python_tag|>{"name": "get_weather", "parameters": {"city": "Tokyo"}}; '
        '{"name": "get_weather", "parameters": {"city": "Paris", "days": 2}};{"name": "get_weather", "arguments": {}}'
    )
    events = parse(llama, text)
    assert summary(events) == [
        ("text", "Let me check."),
        ("call", "get_weather", {"city": "Tokyo"}),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
        ("call", "get_weather", {}),
    ]
    assert [e.text for e in events if isinstance(e, Marker)] == ["<|python_tag|>", "; ", ";"]


def test_text_after_the_calls():
    text = LITERAL + "\nI'll wait for the result."
    assert summary(parse(llama, text)) == [
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("text", "I'll wait for the result."),
    ]


def test_not_a_call_is_text():
    for text in ['{"answer": 42}', "<|python_tag|>import math\nprint(math.pi)", '<|python_tag|>{"name": "two words"}']:
        assert summary(parse(llama, text)) == [("text", text)]


def test_invalid_arguments_run_to_the_end():
    text = '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Tokyo" "days": 3}} trailing'
    events = parse(llama, text)
    assert summary(events) == [("incomplete", "get_weather", "invalid_arguments")]
    assert events[-1].arguments == '{"city": "Tokyo" '


def test_truncated_call():
    assert summary(parse(llama, '{"name": "get_weather", "parameters": {"city": "Tok')) == [
        ("incomplete", "get_weather", "truncated")
    ]


def test_bare_json_answer_naming_no_declared_tool_stays_text():
    from .support import WEATHER, parse, splitter_factory, summary

    text = '{"name": "Alice", "parameters": {"age": 30}}'
    assert summary(parse(splitter_factory(None, "llama3_json", [WEATHER]), text)) == [("text", text)]
    tagged = '<|python_tag|>{"name": "Alice", "parameters": {}}'
    assert summary(parse(splitter_factory(None, "llama3_json", [WEATHER]), tagged))[0][:2] == ("call", "Alice")
