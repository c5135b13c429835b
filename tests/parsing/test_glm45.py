import pytest

from tokenyard.conversation import ToolSpec
from tokenyard.events import ToolCallReady

from .support import WEATHER, parse, splitter_factory, summary

LITERAL = (
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Tokyo</arg_value>\n"
    "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
)
SEARCH = ToolSpec(
    name="search",
    description="Search",
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "filters": {"type": "object"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "limit": {"type": "number"},
            "exact": {"type": "boolean"},
        },
    },
)
glm = splitter_factory(None, "glm45", [WEATHER, SEARCH])
glm_thinking = splitter_factory("glm45", "glm45", [WEATHER, SEARCH])


def readies(events):
    return [e for e in events if isinstance(e, ToolCallReady)]


def test_reference_literal():
    events = parse(glm, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = readies(events)[0]
    assert ready.arguments == '{"city": "Tokyo", "days": 3}'
    assert ready.raw == LITERAL


def test_values_typed_by_schema_and_json_containers():
    text = (
        "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>3</arg_value>\n"
        '<arg_key>filters</arg_key>\n<arg_value>{"lang": "ja", "year": [2024, 2025]}</arg_value>\n'
        "<arg_key>tags</arg_key>\n<arg_value>['a', 'b']</arg_value>\n"
        "<arg_key>limit</arg_key>\n<arg_value>2.5</arg_value>\n"
        "<arg_key>exact</arg_key>\n<arg_value>true</arg_value>\n"
        "<arg_key>extra</arg_key>\n<arg_value>7</arg_value>\n</tool_call>"
    )
    assert summary(parse(glm, text)) == [
        (
            "call",
            "search",
            {
                "query": "3",
                "filters": {"lang": "ja", "year": [2024, 2025]},
                "tags": ["a", "b"],
                "limit": 2.5,
                "exact": True,
                "extra": 7,  # undeclared: read as JSON where it is JSON (vLLM, Dynamo)
            },
        )
    ]


def test_undeclared_values_are_json_where_they_are_json():
    # vLLM's test_extract_tool_calls_numeric_deserialization, Dynamo's
    # test_parse_tool_call_with_json_value: no schema, so the text decides.
    text = (
        "<tool_call>anything<arg_key>n</arg_key><arg_value>42</arg_value>"
        "<arg_key>ok</arg_key><arg_value>false</arg_value>"
        '<arg_key>f</arg_key><arg_value>{"a": [1]}</arg_value>'
        "<arg_key>city</arg_key><arg_value>New York</arg_value></tool_call>"
    )
    assert summary(parse(glm, text)) == [
        ("call", "anything", {"n": 42, "ok": False, "f": {"a": [1]}, "city": "New York"})
    ]


def test_string_values_keep_unicode_quotes_and_newlines():
    value = '東京 🌸 "q" \\ \nline2 <b>'
    text = f"<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>{value}</arg_value>\n</tool_call>"
    assert summary(parse(glm, text)) == [("call", "get_weather", {"city": value})]


def test_no_arguments():
    events = parse(glm, "<tool_call>get_weather\n</tool_call>")
    assert summary(events) == [("call", "get_weather", {})]
    assert readies(events)[0].arguments == "{}"


def test_prose_and_several_calls():
    text = "Checking.\n" + LITERAL + "\n" + LITERAL.replace("Tokyo", "Paris") + "\nDone."
    assert summary(parse(glm, text)) == [
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
        ("text", "Done."),
    ]


def test_literal_backslash_n_between_tags():
    text = "<tool_call>get_weather\\n<arg_key>city</arg_key>\\n<arg_value>Oslo</arg_value>\\n</tool_call>"
    assert summary(parse(glm, text)) == [("call", "get_weather", {"city": "Oslo"})]


def test_tags_inside_a_value_are_the_values_text():
    value = "x <arg_key>k</arg_key> </tool_call> y"
    text = f"<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>{value}</arg_value></tool_call>"
    assert summary(parse(glm, text)) == [("call", "get_weather", {"city": value})]
    # A value that never closes runs to the end of output: never a call.
    cut = "<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>Oslo<arg_key>days</arg_key></tool_call>"
    assert summary(parse(glm, cut)) == [("incomplete", "get_weather", "truncated")]


def test_broken_structure_is_invalid():
    text = "<tool_call>get_weather\n<arg_key>city</arg_key>\nTokyo\n</tool_call>after"
    assert summary(parse(glm, text)) == [("incomplete", "get_weather", "invalid_arguments"), ("text", "after")]


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>I will look it up</tool_call> ok",
        '<tool_call>{"name": "get_weather"}</tool_call>',
    ],
)
def test_not_a_call_is_text(text):
    events = parse(glm, text)
    assert summary(events) == [("text", text)]


def test_interleaved_with_reasoning_in_order():
    text = (
        "<think>First Tokyo.</think>\n"
        + LITERAL
        + "\n<think>Now Paris.</think>\n"
        + LITERAL.replace("Tokyo", "Paris")
        + "\nBoth done."
    )
    assert summary(parse(glm_thinking, text)) == [
        ("reasoning", "First Tokyo."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Now Paris."),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
        ("text", "Both done."),
    ]


def test_call_inside_reasoning_ends_it():
    text = "<think>I should call it.\n" + LITERAL + "</think>Done."
    assert summary(parse(glm_thinking, text)) == [
        ("reasoning", "I should call it."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("text", "Done."),
    ]
