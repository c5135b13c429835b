from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["gigachat3"][1]
giga = splitter_factory(None, "gigachat3", [WEATHER])


def test_function_call_role_after_the_text():
    text = "Checking.<|message_sep|>\n\n" + LITERAL + "<|message_sep|>\n\n"
    assert summary(parse(giga, text)) == [("text", "Checking."), ("call", "get_weather", {"city": "Tokyo", "days": 3})]


def test_gigachat_31_function_call_token():
    text = 'Checking.<|function_call|>{"name": "get_weather", "arguments": {"city": "A"}}'
    assert summary(parse(giga, text)) == [("text", "Checking."), ("call", "get_weather", {"city": "A"})]


def test_message_end_is_syntax_and_a_cut_call_incomplete():
    assert summary(parse(giga, "Sunny.<|message_sep|>\n\n")) == [("text", "Sunny.")]
    assert summary(parse(giga, LITERAL[:50])) == [("incomplete", "get_weather", "truncated")]
