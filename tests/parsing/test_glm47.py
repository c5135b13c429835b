from tokenyard.events import ToolCallReady

from .support import WEATHER, parse, splitter_factory, summary

LITERAL = (
    "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Tokyo</arg_value>"
    "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>"
)
glm47 = splitter_factory(None, "glm47", [WEATHER])
glm47_thinking = splitter_factory("glm45", "glm47", [WEATHER])


def test_reference_literal():
    events = parse(glm47, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = next(e for e in events if isinstance(e, ToolCallReady))
    assert ready.arguments == '{"city": "Tokyo", "days": 3}'
    assert ready.raw == LITERAL


def test_back_to_back_calls_and_a_call_without_arguments():
    text = "On it." + LITERAL + "<tool_call>get_weather</tool_call>" + "Done."
    assert summary(parse(glm47, text)) == [
        ("text", "On it."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {}),
        ("text", "Done."),
    ]


def test_truncated_inside_a_key():
    assert summary(parse(glm47, "<tool_call>get_weather<arg_key>ci")) == [("incomplete", "get_weather", "truncated")]


def test_not_a_call_is_text():
    text = "Write <tool_call> tags like this."
    assert summary(parse(glm47, text)) == [("text", text)]


def test_interleaved_with_reasoning_in_order():
    text = (
        "<think>First Tokyo.</think>"
        + LITERAL
        + "<think>Now Paris.</think>"
        + LITERAL.replace("Tokyo", "Paris")
        + "Both done."
    )
    assert summary(parse(glm47_thinking, text)) == [
        ("reasoning", "First Tokyo."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Now Paris."),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
        ("text", "Both done."),
    ]


def test_a_root_union_types_a_value_by_its_discriminator_read_before_or_after_it():
    # SGLang's glm47 schema tests (completed siblings disambiguate a root union).
    from tokenyard.conversation import ToolSpec

    branches = [
        {"properties": {"kind": {"const": "text"}, "value": {"type": "string"}}},
        {"properties": {"kind": {"const": "count"}, "value": {"type": "integer"}}},
    ]
    make = splitter_factory(None, "glm47", [ToolSpec(name="inspect", parameters={"oneOf": branches})])

    def text(*pairs: tuple[str, str]) -> str:
        body = "".join(f"<arg_key>{k}</arg_key><arg_value>{v}</arg_value>" for k, v in pairs)
        return f"<tool_call>inspect{body}</tool_call>"

    for pairs, expected in (
        ((("kind", "text"), ("value", "7")), {"kind": "text", "value": "7"}),
        ((("kind", "count"), ("value", "7")), {"kind": "count", "value": 7}),
        ((("value", "7"), ("kind", "text")), {"value": "7", "kind": "text"}),
        ((("value", "7"), ("kind", "count"), ("note", "x")), {"value": 7, "kind": "count", "note": "x"}),
    ):
        assert summary(parse(make, text(*pairs))) == [("call", "inspect", expected)]
