import json

import pytest

from tokenyard.events import Marker, ToolCallReady, ToolCallStart

from .support import WEATHER, parse, splitter_factory, summary

LITERAL = 'functools[{"name":"get_weather","arguments":{"city":"Tokyo","days":3}}]'
phi4 = splitter_factory(None, "phi4", [WEATHER])
phi4_thinking = splitter_factory("basic", "phi4", [WEATHER])


def calls(*objects: dict) -> str:
    return "functools" + json.dumps(list(objects), ensure_ascii=False)


def test_reference_literal():
    events = parse(phi4, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = [e for e in events if isinstance(e, ToolCallReady)][0]
    assert ready.arguments == '{"city":"Tokyo","days":3}'
    assert ready.raw == '{"name":"get_weather","arguments":{"city":"Tokyo","days":3}}'
    assert [e.text for e in events if isinstance(e, Marker)] == ["functools[", "]"]


def test_several_calls_with_prose_around():
    text = (
        "Sure. "
        + calls(
            {"name": "get_weather", "arguments": {"city": "Tokyo"}},
            {"name": "get_weather", "arguments": {"city": "Lima"}},
        )
        + " Anything else?"
    )
    assert summary(parse(phi4, text)) == [
        ("text", "Sure."),
        ("call", "get_weather", {"city": "Tokyo"}),
        ("call", "get_weather", {"city": "Lima"}),
        ("text", "Anything else?"),
    ]


@pytest.mark.parametrize("arguments", [{}, {"city": "Kraków 🥟"}, {"s": ']"functools[', "n": {"l": [1, [2, [3]]]}}])
def test_argument_shapes(arguments):
    events = parse(phi4, calls({"name": "get_weather", "arguments": arguments}))
    assert summary(events) == [("call", "get_weather", arguments)]
    assert [e for e in events if isinstance(e, ToolCallReady)][0].arguments == json.dumps(arguments, ensure_ascii=False)


def test_the_word_functools_in_prose_is_text():
    text = "Use functools.lru_cache, or functools [the module] for that."
    assert summary(parse(phi4, text)) == [("text", text)]


def test_functools_in_reasoning_does_not_end_it():
    text = "<think>\nMaybe functools.partial helps.\n</think>\n" + LITERAL
    assert summary(parse(phi4_thinking, text)) == [
        ("reasoning", "Maybe functools.partial helps."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_invalid_arguments_run_to_the_end():
    text = 'functools[{"name": "get_weather", "arguments": {"city": "Tokyo"]}] sorry'
    events = parse(phi4, text)
    assert summary(events) == [("incomplete", "get_weather", "invalid_arguments")]
    assert events[-1].raw == '{"name": "get_weather", "arguments": {"city": "Tokyo"]}] sorry'


def test_truncated_call():
    assert summary(parse(phi4, 'functools[{"name": "get_weather", "arguments": {"city": "Tok')) == [
        ("incomplete", "get_weather", "truncated")
    ]


def test_undeclared_tool_is_flagged():
    events = parse(phi4, calls({"name": "delete_all", "arguments": {}}))
    assert [e.declared for e in events if isinstance(e, (ToolCallStart, ToolCallReady))] == [False, False]
