from tokenyard.events import ToolCallDelta, ToolCallStart

from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["hy_v3"][1]
hy = splitter_factory("hy_v3", "hy_v3", [WEATHER])


def test_reference_literal_two_calls_in_one_section_and_prose():
    paris = LITERAL.replace("Tokyo", "Paris")
    two = paris.replace("</tool_calls:opensource>", "") + LITERAL.replace("<tool_calls:opensource>\n", "")
    assert summary(parse(hy, "Checking.\n" + two + "\nDone.")) == [
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("text", "Done."),
    ]


def test_unsuffixed_tokens_of_the_preview_tokenizer():
    text = (
        "<tool_calls>\n<tool_call>get_weather<tool_sep>\n<arg_key>city</arg_key>\n<arg_value>Tokyo</arg_value>\n"
        "</tool_call>\n</tool_calls>"
    )
    assert summary(parse(hy, text)) == [("call", "get_weather", {"city": "Tokyo"})]


def test_reasoning_opened_by_the_prompt_and_a_section_ends_it():
    opened = splitter_factory("hy_v3", "hy_v3", [WEATHER], prompt_opened_reasoning=True)
    assert summary(parse(opened, "Look it up." + LITERAL)) == [
        ("reasoning", "Look it up."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]
    assert summary(parse(opened, "Easy.</think:opensource>Sunny.")) == [("reasoning", "Easy."), ("text", "Sunny.")]


def test_zero_argument_call_and_a_value_holding_tags():
    text = "<tool_calls><tool_call>get_time<tool_sep></tool_call></tool_calls>"
    assert summary(parse(hy, text)) == [("call", "get_time", {})]
    value = "<tool_calls><tool_call>f<tool_sep><arg_key>x</arg_key><arg_value>a</tool_call>b</arg_value></tool_call></tool_calls>"
    assert summary(parse(hy, value)) == [("call", "f", {"x": "a</tool_call>b"})]


def test_streams_and_truncates():
    splitter = hy()
    events = splitter.feed(LITERAL[: LITERAL.index("Tokyo") + 3])
    assert any(isinstance(e, ToolCallStart) for e in events)
    assert "".join(e.arguments for e in events if isinstance(e, ToolCallDelta)) == '{"city": "Tok'
    assert summary(parse(hy, LITERAL[: LITERAL.index("Tokyo") + 3])) == [("incomplete", "get_weather", "truncated")]
