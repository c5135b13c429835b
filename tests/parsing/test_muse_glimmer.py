from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["muse_glimmer"][1]
muse = splitter_factory("muse_glimmer", "muse_glimmer", [WEATHER])


def test_reasoning_call_and_answer_channels():
    text = (
        " to=self<|message|>Need the weather.<|eom|><|start|>assistant"
        + LITERAL
        + "<|start|>assistant to=user<|message|>Sunny.<|eot|>"
    )
    assert summary(parse(muse, text)) == [
        ("reasoning", "Need the weather."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("text", "Sunny."),
    ]


def test_markup_quoted_in_the_answer_or_in_reasoning_is_not_a_call():
    block = LITERAL.split("<|message|>", 1)[1].removesuffix("<|eom|>")
    answer = " to=user<|message|>Like this:\n" + block + "<|eot|>"
    assert summary(parse(muse, answer)) == [("text", "Like this:\n" + block)]
    thought = " to=self<|message|>Maybe " + block + "<|eom|>"
    assert summary(parse(muse, thought)) == [("reasoning", "Maybe " + block)]


def test_tool_channel_without_a_block_is_text():
    text = " to=get_weather<|message|>Tokyo please"
    assert summary(parse(muse, text)) == [("text", text.lstrip())]


def test_a_function_name_doubled_as_its_own_namespace_is_the_function():
    # SGLang's muse_glimmer detector tests: `to=get_weather.get_weather`.
    name = "get_weather.get_weather"
    text = (
        f" to=self<|message|>Need weather.<|eom|><|start|>assistant to={name}<|message|><atem:function_calls>\n"
        f'<atem:invoke name="{name}">\n<atem:parameter name="city">Paris</atem:parameter>\n</atem:invoke>\n'
        "</atem:function_calls>"
    )
    events = summary(parse(muse, text))
    assert ("call", "get_weather", {"city": "Paris"}) in events


def test_a_value_no_schema_types_is_json_where_it_is_json():
    # SGLang's muse_glimmer test_parameter_value_typing (the response schema's allow_non_json).
    text = (
        "<|start|>assistant to=get_weather<|message|><atem:function_calls>\n"
        '<atem:invoke name="get_weather">\n<atem:parameter name="days">3</atem:parameter>\n'
        '<atem:parameter name="note">two words</atem:parameter>\n</atem:invoke>\n</atem:function_calls>'
    )
    assert ("call", "get_weather", {"days": 3, "note": "two words"}) in summary(parse(muse, text))


def test_doubled_name_of_a_bare_tool_is_the_declared_tool():
    # The template lists a tool without a namespace under a namespace of its own
    # name; vLLM's test_muse_glimmer.py::test_doubled_bare_name_collapses.
    doubled = LITERAL.replace("get_weather", "get_weather.get_weather")
    assert summary(parse(muse, doubled)) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    # Only the exact doubling of a declared name; another namespace stays as written.
    # (An undeclared tool's values are read as JSON where JSON: the response schema's allow_non_json.)
    other = LITERAL.replace("get_weather", "foo.get_weather")
    assert summary(parse(muse, other)) == [("call", "foo.get_weather", {"city": "Tokyo", "days": 3})]


def test_a_channel_header_without_its_role_or_recipient_is_framing():
    # SGLang's muse_glimmer reasoning tests: `<|start|>` opens a channel with or
    # without `assistant`; a header without `to=` is the user's channel.
    text = "<|start|>to=self<|message|>Think.<|eom|><|start|><|message|>Sunny.<|eom|><|start|>to=user<|message|>Bye."
    assert summary(parse(muse, text)) == [("reasoning", "Think."), ("text", "Sunny."), ("text", "Bye.")]
