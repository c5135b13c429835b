import json

import pytest

from tokenyard.events import Marker, ToolCallDelta, ToolCallIncomplete, ToolCallReady, ToolCallStart

from .support import WEATHER, parse, splitter_factory, summary

LITERAL = '[get_weather(city="Tokyo", days=3)]'
pythonic = splitter_factory(None, "pythonic", [WEATHER])
pythonic_thinking = splitter_factory("basic", "pythonic", [WEATHER])


def test_reference_literal():
    events = parse(pythonic, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = [e for e in events if isinstance(e, ToolCallReady)][0]
    assert ready.arguments == '{"city": "Tokyo", "days": 3}'
    # The bare `[` is text the model wrote: it goes with the list's first call.
    assert ready.raw == '[get_weather(city="Tokyo", days=3)'
    assert [e.text for e in events if isinstance(e, Marker)] == ["]"]


def test_wrapped_in_python_start_and_end():
    text = '<|python_start|>[get_weather(city="Tokyo", days=3)]<|python_end|>'
    events = parse(pythonic, text)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    assert [e.text for e in events if isinstance(e, Marker)] == ["<|python_start|>[", "]<|python_end|>"]


def test_announced_at_the_paren_and_ready_at_the_closing_paren():
    splitter = pythonic()
    assert [type(e) for e in splitter.feed('[get_weather(city="To')] == [ToolCallStart]
    assert [type(e) for e in splitter.feed('kyo")')] == [ToolCallDelta, ToolCallReady]


def test_several_calls_with_prose_around():
    text = "I'll check both.\n[get_weather(city='Tokyo'), get_weather(city=\"Paris\", days=2), get_time()]\nDone."
    assert summary(parse(pythonic, text)) == [
        ("text", "I'll check both."),
        ("call", "get_weather", {"city": "Tokyo"}),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
        ("call", "get_time", {}),
        ("text", "Done."),
    ]


@pytest.mark.parametrize(
    "source, arguments",
    [
        ("", {}),
        ("city='東京 🌸', days=3", {"city": "東京 🌸", "days": 3}),
        (r"city='it\'s \"q\" (a) [b] \\ \n'", {"city": 'it\'s "q" (a) [b] \\ \n'}),
        ('city="""tri"ple\nline"""', {"city": 'tri"ple\nline'}),
        (
            "opts={'a': [1, -2.5, (3, 4)], 'b': None, 'c': True, 'd': False, 1: 'one'}",
            {"opts": {"a": [1, -2.5, [3, 4]], "b": None, "c": True, "d": False, "1": "one"}},
        ),
        # Sets in written order (JSON has none); JSON's names inside values (LFM2, OLMo 3).
        ("tags={'urgent', 'bug'}", {"tags": ["urgent", "bug"]}),
        ('data={"on": true, "off": false, "x": null}', {"data": {"on": True, "off": False, "x": None}}),
        # A raw newline only a string can hold; a NUL byte.
        ("cmd='cat f\nEOF'", {"cmd": "cat f\nEOF"}),
        ("cmd='a\x00b'", {"cmd": "a\x00b"}),
    ],
)
def test_python_literals_become_json(source, arguments):
    events = parse(pythonic, f"[get_weather({source})]")
    assert summary(events) == [("call", "get_weather", arguments)]
    assert [e for e in events if isinstance(e, ToolCallReady)][0].arguments == json.dumps(arguments, ensure_ascii=False)


@pytest.mark.parametrize(
    "text", ["[1, 2]", "[see docs](https://example.com)", "[x] done", "a[0] = [b]", "[]", "[get_weather ]"]
)
def test_text_that_merely_starts_with_a_bracket(text):
    assert summary(parse(pythonic, text)) == [("text", text)]


@pytest.mark.parametrize(
    "source", ["'Tokyo'", "city=Tokyo", "city=open('x')", "**opts", "city=b'z'", "city=float('nan')"]
)
def test_invalid_arguments(source):
    # No call of the list was delivered: its brackets are text with the call's.
    text = f"[get_weather({source})] after"
    events = parse(pythonic, text)
    assert summary(events) == [("incomplete", "get_weather", "invalid_arguments"), ("text", "] after")]
    assert [e.raw for e in events if isinstance(e, ToolCallIncomplete)] == [f"[get_weather({source})"]


def test_mismatched_bracket_breaks_the_list():
    text = "[get_weather(city=['Tokyo')] after"
    events = parse(pythonic, text)
    assert summary(events) == [("incomplete", "get_weather", "invalid_arguments"), ("text", "] after")]


def test_truncated_call():
    assert summary(parse(pythonic, "[get_weather(city='Tok")) == [("incomplete", "get_weather", "truncated")]
    assert summary(parse(pythonic, '[get_weather(city="""Tok""')) == [("incomplete", "get_weather", "truncated")]


def test_undeclared_tool_is_flagged():
    # The python wrapper says a call list follows, so even an undeclared name is a call.
    events = parse(pythonic, "<|python_start|>[run_shell(cmd='ls')]<|python_end|>")
    assert [e.declared for e in events if isinstance(e, (ToolCallStart, ToolCallReady))] == [False, False]


def test_bare_list_starting_with_an_undeclared_name_is_prose():
    assert summary(parse(pythonic, "[run_shell(cmd='ls')]")) == [("text", "[run_shell(cmd='ls')]")]


def test_bracket_in_reasoning_stays_reasoning():
    text = "<think>\nMaybe [get_weather(city='x')] later.\n</think>\n" + LITERAL
    assert summary(parse(pythonic_thinking, text)) == [
        ("reasoning", "Maybe [get_weather(city='x')] later."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_interleaved_with_reasoning_in_order():
    text = (
        "<think>\nTokyo.\n</think>\n"
        + LITERAL
        + "<think>\nParis.\n</think>\n"
        + LITERAL.replace("Tokyo", "Paris")
        + " Done."
    )
    assert summary(parse(pythonic_thinking, text)) == [
        ("reasoning", "Tokyo."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Paris."),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
        ("text", "Done."),
    ]


def test_inline_code_with_an_undeclared_name_stays_prose():
    from .support import WEATHER, parse, splitter_factory, summary

    text = "Use [f(x) for x in y] here."
    assert summary(parse(splitter_factory(None, "pythonic", [WEATHER]), text)) == [("text", text)]


def test_keyword_named_parameters_constant_fstrings_and_unpacked_mappings():
    from .support import WEATHER, parse, splitter_factory, summary

    make = splitter_factory(None, "pythonic", [WEATHER])
    # `from` and `class` are Python keywords but fine schema property names.
    text = "[get_weather(city='Oslo', from=1, note='from=2', class={'if': [1,\n 2]})]"
    assert summary(parse(make, text)) == [
        ("call", "get_weather", {"city": "Oslo", "from": 1, "note": "from=2", "class": {"if": [1, 2]}})
    ]
    text = "[get_weather(**{'city': 'Oslo', 'days': 1}, days=2, unit=f'metric')]"
    assert summary(parse(make, text)) == [("call", "get_weather", {"city": "Oslo", "days": 2, "unit": "metric"})]
    # Not literals: an f-string with a placeholder, a mapping that is not a dict.
    for text in ("[get_weather(city=f'{x}')]", "[get_weather(**[1, 2])]"):
        assert [kind for kind, *_ in summary(parse(make, text))] == ["incomplete", "text"]


def test_an_invalid_escape_is_kept_as_written_without_a_warning():
    import warnings

    from .support import WEATHER, parse, splitter_factory, summary

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        events = parse(splitter_factory(None, "pythonic", [WEATHER]), '[get_weather(city="\\d+")]')
    assert summary(events) == [("call", "get_weather", {"city": "\\d+"})]


def test_zero_padded_integers_are_their_decimal_value():
    from .support import WEATHER, parse, splitter_factory, summary

    make = splitter_factory(None, "pythonic", [WEATHER])
    text = "[get_weather(city='07', days=07, offset=-005, ratio=007.5)]"
    assert summary(parse(make, text)) == [
        ("call", "get_weather", {"city": "07", "days": 7, "offset": -5, "ratio": 7.5})
    ]
    # Two numbers with a space between them are no number.
    assert [kind for kind, *_ in summary(parse(make, "[get_weather(days=0 7)]"))] == ["incomplete", "text"]
