from tokenyard.conversation import ToolSpec

from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["step3p5"][1]
# The template always ends the prompt with `<think>\n`.
step = splitter_factory("step3p5", "step3p5", [WEATHER])


def test_output_starts_inside_reasoning():
    text = "Need the weather.\n</think>\n" + LITERAL
    assert summary(parse(step, text)) == [
        ("reasoning", "Need the weather."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_call_ends_unclosed_reasoning_and_text_follows():
    text = "Need the weather.\n" + LITERAL + "\nIt is sunny."
    assert summary(parse(step, text)) == [
        ("reasoning", "Need the weather."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("text", "It is sunny."),
    ]


def test_thinking_off_is_plain_text():
    off = splitter_factory("step3p5", "step3p5", [WEATHER], thinking_enabled=False)
    assert summary(parse(off, "Hello.")) == [("text", "Hello.")]


def test_misspelled_tags_are_read_only_for_declared_names():
    bash = ToolSpec(name="bash", parameters={"type": "object", "properties": {"command": {"type": "string"}}})
    make = splitter_factory(None, "step3p5", [bash])
    for text in (
        "<tool_call><function bash><parameter=command>pwd</parameter></function></tool_call>",
        "<tool_call><functionbash><parameter=command>pwd</parameter></function></tool_call>",
        "<tool_call><function=bash\n<parameter=command\npwd</parameter></function></tool_call>",
        "<tool_call><function=bash><parameter=parameter=command\npwd</parameter></function></tool_call>",
    ):
        assert summary(parse(make, text)) == [("call", "bash", {"command": "pwd"})], text
    # A name the request did not declare is not guessed at: the text stays.
    unknown = "<tool_call><function unknown><parameter=command>pwd</parameter></function></tool_call>"
    assert [s[0] for s in summary(parse(make, unknown))] == ["text"]
    # qwen3_coder itself reads only well-formed tags.
    qwen = splitter_factory(None, "qwen3_coder", [bash])
    assert [s[0] for s in summary(parse(qwen, "<tool_call><function bash></function></tool_call>"))] == ["text"]


def test_a_left_out_parameter_close_ends_at_the_next_declared_parameter():
    weather = ToolSpec(
        name="weather",
        parameters={"type": "object", "properties": {"city": {"type": "string"}, "state": {"type": "string"}}},
    )
    make = splitter_factory(None, "step3p5", [weather])
    text = "<tool_call><function=weather><parameter=city>Dallas<parameter=state>TX</parameter></function></tool_call>"
    assert summary(parse(make, text)) == [("call", "weather", {"city": "Dallas", "state": "TX"})]
    # A tag of an undeclared parameter, or of one already passed, is the value's text.
    text = "<tool_call><function=weather><parameter=city>a<parameter=zip>1</parameter></function></tool_call>"
    assert summary(parse(make, text)) == [("call", "weather", {"city": "a<parameter=zip>1"})]


def test_a_call_closed_without_its_parameter_close_at_the_end_of_output():
    bash = ToolSpec(name="bash", parameters={"type": "object", "properties": {"command": {"type": "string"}}})
    make = splitter_factory(None, "step3p5", [bash])
    text = "<tool_call><function=bash><parameter=command>pwd</tool_call>"
    assert summary(parse(make, text)) == [("call", "bash", {"command": "pwd"})]
    # Anywhere else a closing tag inside a value is the value's text.
    text = "<tool_call><function=bash><parameter=command>echo </tool_call> ok</parameter></function></tool_call>"
    assert summary(parse(make, text)) == [("call", "bash", {"command": "echo </tool_call> ok"})]
