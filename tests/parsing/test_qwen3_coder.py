from tokenyard.events import ToolCallReady

from .support import WEATHER, parse, splitter_factory, summary

LITERAL = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
)
coder = splitter_factory(None, "qwen3_coder", [WEATHER])
qwen3 = splitter_factory("qwen3", "qwen3_coder", [WEATHER])


def test_reference_literal():
    events = parse(coder, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = [e for e in events if isinstance(e, ToolCallReady)][0]
    assert ready.arguments == '{"city": "Tokyo", "days": 3}'


def test_multiline_string_value_and_unicode():
    text = '<tool_call>\n<function=get_weather>\n<parameter=city>\nline1\n  東京 "q" \\\n\n</parameter>\n</function>\n</tool_call>'
    assert summary(parse(coder, text)) == [("call", "get_weather", {"city": 'line1\n  東京 "q" \\\n'})]


def test_no_parameters():
    text = "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>"
    assert summary(parse(coder, text)) == [("call", "get_weather", {})]


def test_missing_opening_tool_call():
    text = "Sure.\n<function=get_weather>\n<parameter=city>\nTokyo\n</parameter>\n</function>\n</tool_call>"
    assert summary(parse(coder, text)) == [("text", "Sure."), ("call", "get_weather", {"city": "Tokyo"})]


def test_several_calls_and_undeclared_parameter():
    one = "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n<parameter=extra>\n7\n</parameter>\n</function>\n</tool_call>"
    assert summary(parse(coder, one + "\n" + LITERAL)) == [
        ("call", "get_weather", {"city": "Oslo", "extra": "7"}),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_interleaved_with_reasoning_in_order():
    text = (
        "<think>\nFirst Tokyo.\n</think>\n\n"
        + LITERAL
        + "\n<think>\nNow Paris.\n</think>\n\n"
        + LITERAL.replace("Tokyo", "Paris")
        + "\nBoth done."
    )
    assert summary(parse(qwen3, text)) == [
        ("reasoning", "First Tokyo."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Now Paris."),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
        ("text", "Both done."),
    ]


def test_call_inside_reasoning_ends_it():
    text = "<think>\nI should call it.\n" + LITERAL + "\n</think>\n\nDone."
    assert summary(parse(qwen3, text)) == [
        ("reasoning", "I should call it."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("text", "Done."),
    ]


def test_missing_parameter_close_before_another_declared_parameter():
    # vLLM's test_extract_tool_calls_missing_closing_parameter_tag: a line opening
    # another parameter of the tool ends the value; one the tool does not declare
    # (or one already given) is the value's own text.
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
    )
    assert summary(parse(coder, text)) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    quoted = text.replace("<parameter=days>\n3\n", "<parameter=zone>\nx\n").replace(
        "\n</parameter>\n</f", "</parameter>\n</f"
    )
    assert summary(parse(coder, quoted)) == [("call", "get_weather", {"city": "Tokyo\n<parameter=zone>\nx"})]


def test_a_misspelt_parameter_close_before_another_declared_parameter_is_the_close():
    # SGLang's test_*_strips_drifted_end_marker: `</parameter1>`, `</parameter_function>`
    # or `</parameter` with its `>` left out, right before the next declared
    # parameter's tag, is the value's close, not its text.
    for close in ("</parameter1>", "</parameter_function>", "</parameter"):
        text = (
            f"<tool_call>\n<function=get_weather>\n<parameter=city>\nShanghai\n{close}\n"
            "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
        )
        assert summary(parse(coder, text)) == [("call", "get_weather", {"city": "Shanghai", "days": 3})]
    # Before anything else (text, a parameter already given) it is the value's text.
    for tail, value in (
        ("</parameter1> more\n</parameter>\n", "Shanghai\n</parameter1> more"),
        ("</parameter_x>\n<parameter=city>\nx\n</parameter>\n", "Shanghai\n</parameter_x>\n<parameter=city>\nx"),
    ):
        text = f"<tool_call>\n<function=get_weather>\n<parameter=city>\nShanghai\n{tail}</function>\n</tool_call>"
        assert summary(parse(coder, text)) == [("call", "get_weather", {"city": value})]


def test_a_bare_function_tag_calls_only_a_declared_tool():
    from tokenyard.conversation import ToolSpec

    bash = ToolSpec(name="bash", parameters={"type": "object", "properties": {"command": {"type": "string"}}})
    make = splitter_factory(None, "qwen3_coder", [bash])
    undeclared = "prefix<function=unknown><parameter=command>pwd</parameter></function>suffix"
    assert [s[0] for s in summary(parse(make, undeclared))] == ["text"]
    declared = "prefix<function=bash><parameter=command>pwd</parameter></function>"
    assert summary(parse(make, declared))[-1] == ("call", "bash", {"command": "pwd"})
    # Inside <tool_call> the call is explicit: an undeclared tool is still a call (flagged undeclared).
    wrapped = "<tool_call><function=unknown><parameter=command>pwd</parameter></function></tool_call>"
    assert summary(parse(make, wrapped)) == [("call", "unknown", {"command": "pwd"})]


def test_closing_parameter_tag_inside_a_value_stays_in_it():
    # A file of parser fixtures: its `</parameter>` lines are followed by more of the
    # file, not by call syntax, so they are the value's text (vLLM's
    # test_qwen3_xml_coder_shared.py, test_content_with_xml_structural_tags).
    value = 'x = [\n    "<parameter=query>\\n",\n    "\\n</parameter>\\n",\n]\n</parameter> done'
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\n" + value + "\n</parameter>\n</function>\n</tool_call>"
    )
    assert summary(parse(coder, text)) == [("call", "get_weather", {"city": value})]


def test_closing_parameter_tag_then_end_of_output_closes_the_value():
    text = "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n"
    assert summary(parse(coder, text)) == [("call", "get_weather", {"city": "Oslo"})]
