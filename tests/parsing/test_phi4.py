from tokenyard.events import Marker, ToolCallReady

from .support import WEATHER, parse, splitter_factory, summary

LITERAL = 'functools[{"name":"get_weather","arguments":{"city":"Tokyo","days":3}}]'
phi4 = splitter_factory(None, "phi4", [WEATHER])
phi4_thinking = splitter_factory("basic", "phi4", [WEATHER])


def test_reference_literal():
    events = parse(phi4, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = [e for e in events if isinstance(e, ToolCallReady)][0]
    assert ready.arguments == '{"city":"Tokyo","days":3}'
    # `functools` is a word the model writes, no special token: it goes with the first call.
    assert ready.raw == 'functools[{"name":"get_weather","arguments":{"city":"Tokyo","days":3}}'
    assert [e.text for e in events if isinstance(e, Marker)] == ["]"]


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
    assert events[-1].raw == 'functools[{"name": "get_weather", "arguments": {"city": "Tokyo"]}] sorry'
