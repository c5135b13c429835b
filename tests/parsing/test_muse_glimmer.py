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


def test_cut_inside_a_value_is_incomplete():
    assert summary(parse(muse, LITERAL[:110])) == [("incomplete", "get_weather", "truncated")]


def test_doubled_name_of_a_bare_tool_is_the_declared_tool():
    # The template lists a tool without a namespace under a namespace of its own
    # name; vLLM's test_muse_glimmer.py::test_doubled_bare_name_collapses.
    doubled = LITERAL.replace("get_weather", "get_weather.get_weather")
    assert summary(parse(muse, doubled)) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    # Only the exact doubling of a declared name; another namespace stays as written.
    other = LITERAL.replace("get_weather", "foo.get_weather")
    assert summary(parse(muse, other)) == [("call", "foo.get_weather", {"city": "Tokyo", "days": "3"})]
