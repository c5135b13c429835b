from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["dots"][1]
dots = splitter_factory(None, "dots", [WEATHER])


def test_invokes_typed_by_the_schema_and_prose_around():
    two = LITERAL.replace(
        "</invoke>\n</dots_function_call>",
        '</invoke>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n</invoke>\n</dots_function_call>',
    )
    assert summary(parse(dots, "Checking.\n" + two + "\nDone.")) == [
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris"}),
        ("text", "Done."),
    ]


def test_bare_names_and_a_bare_invoke_is_text():
    text = "<dots_function_call><invoke name=get_weather><parameter name=city>Tokyo</parameter></invoke></dots_function_call>"
    assert summary(parse(dots, text)) == [("call", "get_weather", {"city": "Tokyo"})]
    bare = '<invoke name="get_weather"></invoke>'
    assert summary(parse(dots, bare)) == [("text", bare)]


def test_cut_value_is_truncated():
    assert summary(parse(dots, LITERAL[: LITERAL.index("Tokyo") + 2])) == [("incomplete", "get_weather", "truncated")]


def test_a_json_call_object_may_stand_in_for_the_invokes():
    text = '<dots_function_call>{"name": "get_weather", "arguments": {"city": "Tokyo"}}</dots_function_call>Done.'
    assert summary(parse(dots, text)) == [("call", "get_weather", {"city": "Tokyo"}), ("text", "Done.")]
    cut = '<dots_function_call>{"name": "get_weather", "arguments": {"ci'
    assert summary(parse(dots, cut)) == [("incomplete", "get_weather", "truncated")]
    not_json = "<dots_function_call>{not json}</dots_function_call>"
    assert summary(parse(dots, not_json))[0][0] == "text"
