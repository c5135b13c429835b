from tokenyard.conversation import ToolSpec

from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["k2_horizon"][1]
k2 = splitter_factory("k2_horizon", "k2_horizon", [WEATHER])


def test_reasoning_then_typed_call():
    assert summary(parse(k2, "Weather first.</ifm|think>" + LITERAL)) == [
        ("reasoning", "Weather first."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_untyped_xml_and_a_section_that_ends_unclosed_reasoning():
    text = (
        "Look it up.<ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key>"
        "<ifm|arg_value>Paris</ifm|arg_value></ifm|tool_call></ifm|tool_calls>"
    )
    assert summary(parse(k2, text)) == [("reasoning", "Look it up."), ("call", "get_weather", {"city": "Paris"})]


def test_the_declared_type_decides_where_the_schema_is_silent():
    tool = ToolSpec(name="f", parameters={"type": "object", "properties": {}})
    text = (
        "<ifm|tool_calls><ifm|tool_call>f<ifm|arg_key>n</ifm|arg_key><ifm|arg_type>integer</ifm|arg_type>"
        "<ifm|arg_value>7</ifm|arg_value><ifm|arg_key>s</ifm|arg_key><ifm|arg_type>string</ifm|arg_type>"
        "<ifm|arg_value>7</ifm|arg_value></ifm|tool_call></ifm|tool_calls>"
    )
    off = splitter_factory("k2_horizon", "k2_horizon", [tool], thinking_enabled=False)
    assert summary(parse(off, text)) == [("call", "f", {"n": 7, "s": "7"})]


def test_effort_variants_of_the_think_tokens():
    off = splitter_factory("k2_horizon", "k2_horizon", [WEATHER], thinking_enabled=False)
    assert summary(parse(off, "<ifm|think_fast>Quick.</ifm|think_fast>Sunny.")) == [
        ("reasoning", "Quick."),
        ("text", "Sunny."),
    ]


def test_cut_inside_a_type_is_truncated():
    assert summary(parse(k2, "</ifm|think>" + LITERAL[: LITERAL.index("string") + 3])) == [
        ("incomplete", "get_weather", "truncated")
    ]


def test_json_call_bodies_stream_and_end_at_the_call_tag():
    # K2 Horizon's `json` format: one JSON call object per call, inside the same tags.
    make = splitter_factory(None, "k2_horizon", [WEATHER])
    text = (
        'Sure.<ifm|tool_calls>\n<ifm|tool_call>{"name": "get_weather", "arguments": {"city": "Tokyo", "days": "2"}}'
        "</ifm|tool_call>\n</ifm|tool_calls> Done."
    )
    assert summary(parse(make, text)) == [
        ("text", "Sure."),
        ("call", "get_weather", {"city": "Tokyo", "days": "2"}),
        ("text", "Done."),
    ]
    # Not a call object (the name is no string): the text stays text.
    text = '<ifm|tool_call>{"name": 123, "arguments": {}}</ifm|tool_call>'
    assert [kind for kind, *_ in summary(parse(make, text))] == ["text"]
    # Broken arguments: not delivered, its text (end tag included) is the failed call's.
    text = '<ifm|tool_call>{"name": "get_weather", "arguments": {"city": }}</ifm|tool_call>after'
    events = summary(parse(make, text))
    assert events[0][:2] == ("incomplete", "get_weather") and events[-1] == ("text", "after")
