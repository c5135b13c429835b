import json

from tokenyard.events import Marker, ToolCallReady

from .support import WEATHER, parse, splitter_factory, summary

LITERAL = '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}\n</tool_calls>'
minimax = splitter_factory(None, "minimax_m1", [WEATHER])
with_think = splitter_factory("qwen3", "minimax_m1", [WEATHER])


def section(*calls: dict) -> str:
    return "<tool_calls>\n" + "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in calls) + "</tool_calls>"


def test_reference_literal():
    events = parse(minimax, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = [e for e in events if isinstance(e, ToolCallReady)][0]
    assert ready.arguments == '{"city": "Tokyo", "days": 3}'
    assert ready.raw == '{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}'
    assert [e.text for e in events if isinstance(e, Marker)] == ["<tool_calls>\n", "\n</tool_calls>"]


def test_vllm_name_resolves():
    assert summary(parse(splitter_factory(None, "minimax", [WEATHER]), LITERAL)) == summary(parse(minimax, LITERAL))


def test_reasoning_then_calls_one_per_line_with_prose_around():
    text = (
        "<think>\nTokyo and Paris.\n</think>\nLet me look. "
        + section(
            {"name": "get_weather", "arguments": {"city": "Tokyo"}},
            {"name": "get_weather", "arguments": {"city": "Paris"}},
        )
        + "\nHere you go."
    )
    assert summary(parse(with_think, text)) == [
        ("reasoning", "Tokyo and Paris."),
        ("text", "Let me look."),
        ("call", "get_weather", {"city": "Tokyo"}),
        ("call", "get_weather", {"city": "Paris"}),
        ("text", "Here you go."),
    ]


def test_object_over_several_lines_is_one_call():
    text = '<tool_calls>\n{\n  "name": "get_weather",\n  "arguments": {\n    "city": "Oslo"\n  }\n}\n</tool_calls>'
    assert summary(parse(minimax, text)) == [("call", "get_weather", {"city": "Oslo"})]


def test_calls_are_separated_by_newlines_only():
    text = '<tool_calls>\n{"name": "get_weather", "arguments": {}}, {"name": "get_weather", "arguments": {}}\n</tool_calls>'
    assert summary(parse(minimax, text)) == [
        ("call", "get_weather", {}),
        ("text", ', {"name": "get_weather", "arguments": {}}\n</tool_calls>'),
    ]


def test_a_line_that_is_no_call_is_text_and_the_next_lines_still_count():
    text = section({"name": "get_weather", "arguments": {"city": "Oslo"}})[: -len("</tool_calls>")]
    text += '{invalid json here}\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_calls> done'
    assert summary(parse(minimax, text)) == [
        ("call", "get_weather", {"city": "Oslo"}),
        ("text", "{invalid json here}"),
        ("call", "get_weather", {"city": "Rome"}),
        ("text", "done"),
    ]


def test_a_line_that_is_no_call_before_the_closing_tag_on_the_same_line():
    text = '<tool_calls>\n{"name": "get_weather", "arguments": {}}\n{"note": 1}</tool_calls>'
    assert summary(parse(minimax, text)) == [("call", "get_weather", {}), ("text", '{"note": 1}')]


def test_not_a_call_section_is_text():
    for text in ["<tool_calls>none</tool_calls>", "<tool_calls>\n[1, 2]\n</tool_calls>", "<tool_calls>"]:
        assert summary(parse(minimax, text)) == [("text", text)]


def test_invalid_arguments():
    text = '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Tokyo",}}\n</tool_calls> after'
    assert summary(parse(minimax, text)) == [("incomplete", "get_weather", "invalid_arguments"), ("text", "after")]


def test_complete_call_without_closing_tag_is_recovered():
    text = '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Boston"}}'
    assert summary(parse(minimax, text)) == [("call", "get_weather", {"city": "Boston"})]
