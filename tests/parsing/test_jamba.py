import json

from tokenyard.events import Marker, ToolCallReady

from .support import WEATHER, parse, splitter_factory, summary

LITERAL = '<tool_calls>[{"name":"get_weather","arguments":{"city":"Tokyo","days":3}}]</tool_calls>'
jamba = splitter_factory(None, "jamba", [WEATHER])


def section(*calls: dict) -> str:
    return "<tool_calls>" + json.dumps(list(calls), ensure_ascii=False) + "</tool_calls>"


def test_reference_literal():
    events = parse(jamba, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = [e for e in events if isinstance(e, ToolCallReady)][0]
    assert ready.arguments == '{"city":"Tokyo","days":3}'
    assert ready.raw == '{"name":"get_weather","arguments":{"city":"Tokyo","days":3}}'
    assert [e.text for e in events if isinstance(e, Marker)] == ["<tool_calls>[", "]</tool_calls>"]


def test_several_calls_with_prose_around():
    text = (
        "Let me look.\n"
        + section(
            {"name": "get_weather", "arguments": {"city": "Tokyo"}},
            {"name": "get_weather", "parameters": {"city": "Paris"}},
        )
        + "\nHere you go."
    )
    assert summary(parse(jamba, text)) == [
        ("text", "Let me look."),
        ("call", "get_weather", {"city": "Tokyo"}),
        ("call", "get_weather", {"city": "Paris"}),
        ("text", "Here you go."),
    ]


def test_arguments_before_name():
    text = '<tool_calls>[{"arguments": {"city": "Oslo"}, "name": "get_weather"}]</tool_calls>'
    assert summary(parse(jamba, text)) == [("call", "get_weather", {"city": "Oslo"})]


def test_not_a_call_is_text():
    for text in ["<tool_calls>none</tool_calls>", "<tool_calls>[1, 2]</tool_calls>"]:
        assert summary(parse(jamba, text)) == [("text", text)]


def test_second_object_not_a_call_ends_the_list_as_text():
    text = '<tool_calls>[{"name": "get_weather", "arguments": {}}, {"note": 1}]</tool_calls>'
    assert summary(parse(jamba, text)) == [("call", "get_weather", {}), ("text", ', {"note": 1}]</tool_calls>')]


def test_invalid_arguments():
    text = '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Tokyo",}}]</tool_calls> after'
    assert summary(parse(jamba, text)) == [("incomplete", "get_weather", "invalid_arguments"), ("text", "after")]
