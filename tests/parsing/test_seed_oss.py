from tokenyard.events import ToolCallDelta, ToolCallStart

from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["seed_oss"][1]
seed = splitter_factory("seed_oss", "seed_oss", [WEATHER])


def test_reasoning_text_and_one_section_per_call():
    paris = LITERAL.replace("Tokyo", "Paris").replace(">3<", ">2<")
    text = "<seed:think>Two cities.</seed:think>\nChecking.\n" + LITERAL + "\n" + paris
    assert summary(parse(seed, text)) == [
        ("reasoning", "Two cities."),
        ("text", "Checking."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
    ]


def test_budget_reflection_stays_in_reasoning():
    text = "<seed:think>Plan.<seed:cot_budget_reflect>I have used 129 tokens.</seed:cot_budget_reflect>Go.</seed:think>Done."
    assert summary(parse(seed, text)) == [
        ("reasoning", "Plan.<seed:cot_budget_reflect>I have used 129 tokens.</seed:cot_budget_reflect>Go."),
        ("text", "Done."),
    ]


def test_call_section_ends_unclosed_reasoning():
    assert summary(parse(seed, "<seed:think>Look it up.\n" + LITERAL)) == [
        ("reasoning", "Look it up."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_call_syntax_quoted_mid_sentence_in_thinking_stays_reasoning():
    # vLLM's test_extract_tool_calls[tool_call_unlimited_thinking_budget]: the model
    # writes the call out while it thinks, then makes it after </seed:think>.
    quoted = "<seed:think>The format is " + LITERAL + ". Go.</seed:think>"
    assert summary(parse(seed, quoted + LITERAL)) == [
        ("reasoning", "The format is " + LITERAL + ". Go."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_python_str_values_are_typed_by_schema():
    # The template writes non-string values with str(): `True`, `['a']`.
    from tokenyard.conversation import ToolSpec

    tool = ToolSpec(
        name="f", parameters={"type": "object", "properties": {"on": {"type": "boolean"}, "xs": {"type": "array"}}}
    )
    text = "<seed:tool_call>\n<function=f>\n<parameter=on>True</parameter>\n<parameter=xs>['a', 1]</parameter>\n</function>\n</seed:tool_call>"
    assert summary(parse(splitter_factory("seed_oss", "seed_oss", [tool]), text)) == [
        ("call", "f", {"on": True, "xs": ["a", 1]})
    ]


def test_qwen_section_tag_is_text_here():
    text = "Qwen writes <tool_call> tags."
    assert summary(parse(seed, text)) == [("text", text)]


def test_streams_and_truncates():
    splitter = seed()
    events = splitter.feed("<seed:tool_call>\n<function=get_weather>\n<parameter=city>Tok")
    assert any(isinstance(e, ToolCallStart) for e in events)
    assert "".join(e.arguments for e in events if isinstance(e, ToolCallDelta)) == '{"city": "Tok'
    assert summary(parse(seed, LITERAL[: LITERAL.index("Tokyo") + 2])) == [("incomplete", "get_weather", "truncated")]


def test_a_values_own_trailing_newline_is_kept():
    # llama.cpp's Seed-OSS "tool call with inside quotes": values are written inline,
    # so the newline before </parameter> is the code's; a Qwen-style pair is dropped.
    text = (
        "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Tokyo\n</parameter>\n</function>\n</seed:tool_call>"
    )
    assert summary(parse(seed, text)) == [("call", "get_weather", {"city": "Tokyo\n"})]
    paired = text.replace(">Tokyo\n<", ">\nTokyo\n<")
    assert summary(parse(seed, paired)) == [("call", "get_weather", {"city": "Tokyo"})]
