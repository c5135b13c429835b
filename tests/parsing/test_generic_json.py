from tokenyard.events import Marker

from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["generic_json"][1]
generic = splitter_factory(None, "generic_json", [WEATHER])
generic_thinking = splitter_factory("basic", "generic_json", [WEATHER])
TOKYO = ("call", "get_weather", {"city": "Tokyo", "days": 3})
PARIS = ("call", "get_weather", {"city": "Paris"})


def test_bare_object_as_the_answer():
    assert summary(parse(generic, LITERAL)) == [TOKYO]


def test_bare_list_and_both_argument_keys():
    text = '\n[{"name": "get_weather", "parameters": {"city": "Tokyo", "days": 3}}, {"name": "get_weather", "arguments": {"city": "Paris"}}]\n'
    assert summary(parse(generic, text)) == [TOKYO, PARIS]


def test_markers_after_prose():
    toolcall = 'Checking. <TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>'
    events = parse(generic, toolcall)
    assert summary(events) == [("text", "Checking."), PARIS]
    # `<TOOLCALL>` is plain text to the tokenizer: it goes with the list's first call.
    assert [e.text for e in events if isinstance(e, Marker)] == [" ", "]</TOOLCALL>"]
    python_tag = 'Checking. <|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}'
    assert summary(parse(generic, python_tag)) == [("text", "Checking."), PARIS]
    single = '<TOOLCALL>{"name": "get_weather", "arguments": {"city": "Paris"}}</TOOLCALL>'
    assert summary(parse(generic, single)) == [PARIS]


def test_bare_json_after_reasoning_opens_the_output():
    text = '<think>weather?</think>\n{"name": "get_weather", "parameters": {"city": "Paris"}}'
    assert summary(parse(generic_thinking, text)) == [("reasoning", "weather?"), PARIS]


def test_json_that_is_not_a_declared_call_stays_text():
    for text in (
        '{"foo": "bar"}',
        '{"name": "Alice", "arguments": {}}',
        "[1] see the docs",
        'Example: {"name": "get_weather", "parameters": {}}',
    ):
        assert summary(parse(generic, text)) == [("text", text)], text
    # Without declared tools, any name opening the output is a call.
    anything = splitter_factory(None, "generic_json")
    assert summary(parse(anything, '{"name": "hello", "parameters": {"x": 1}}')) == [("call", "hello", {"x": 1})]


def test_dynamo_default_resolves_here():
    from tokenyard.parsing.registry import check_tool_parser_name

    assert check_tool_parser_name("default") == "generic_json"
