from tokenyard.events import Marker, ToolCallReady, ToolCallStart

from .support import WEATHER, parse, splitter_factory, summary

LITERAL = '[TOOL_CALLS]get_weather[ARGS]{"city":"Tokyo","days":3}'
LITERAL_ARRAY = '[TOOL_CALLS][{"name":"get_weather","arguments":{"city":"Tokyo","days":3}}]'
mistral = splitter_factory(None, "mistral", [WEATHER])
magistral = splitter_factory("mistral", "mistral", [WEATHER])


def test_reference_literal():
    events = parse(mistral, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = [e for e in events if isinstance(e, ToolCallReady)][0]
    assert ready.arguments == '{"city":"Tokyo","days":3}'
    # `[TOOL_CALLS]` is a control token, reported as a Marker; the call's raw is the rest.
    assert isinstance(events[0], Marker) and events[0].text == "[TOOL_CALLS]"
    assert ready.raw == LITERAL.removeprefix("[TOOL_CALLS]")


def test_reference_literal_array_shape():
    events = parse(mistral, LITERAL_ARRAY)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = [e for e in events if isinstance(e, ToolCallReady)][0]
    assert ready.arguments == '{"city":"Tokyo","days":3}'
    assert [e.text for e in events if isinstance(e, Marker)] == ["[TOOL_CALLS][", "]"]


def test_ready_as_soon_as_the_arguments_complete():
    splitter = mistral()
    events = splitter.feed('[TOOL_CALLS]get_weather[ARGS]{"city": "Tokyo"}')
    assert isinstance(events[-1], ToolCallReady)


def test_array_with_space_and_several_calls_then_another_array():
    text = (
        '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Tokyo"}}, {"name": "get_weather", "arguments": {}}]'
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Rome"}}]'
    )
    assert summary(parse(mistral, text)) == [
        ("call", "get_weather", {"city": "Tokyo"}),
        ("call", "get_weather", {}),
        ("call", "get_weather", {"city": "Rome"}),
    ]


def test_model_call_id_is_kept():
    text = '[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Tokyo"}'
    events = parse(mistral, text)
    assert [e.id for e in events if isinstance(e, (ToolCallStart, ToolCallReady))] == ["a1B2c3D4e", "a1B2c3D4e"]
    assert [e for e in events if isinstance(e, ToolCallReady)][0].raw == text.removeprefix("[TOOL_CALLS]")


def test_args_token_dropped_by_the_decoder():
    assert summary(parse(mistral, '[TOOL_CALLS]get_weather{"city": "Tokyo"}')) == [
        ("call", "get_weather", {"city": "Tokyo"})
    ]


def test_not_a_call_is_text_after_the_control_token():
    # `[TOOL_CALLS]` stays syntax (a Marker, never content) when no call follows it.
    for text in [
        "[TOOL_CALLS] I can not call tools.",
        "[TOOL_CALLS]get weather",
        "[TOOL_CALLS]get_weather[INST]x",
        "[TOOL_CALLS][]",
    ]:
        events = parse(mistral, text)
        assert summary(events) == [("text", text.removeprefix("[TOOL_CALLS]").lstrip())]
        assert "".join(e.text for e in events if isinstance(e, Marker)).strip() == "[TOOL_CALLS]"


def test_invalid_arguments_run_to_the_next_call():
    text = '[TOOL_CALLS]get_weather[ARGS]{"city": Tokyo} oops[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo"}'
    events = parse(mistral, text)
    assert summary(events) == [
        ("incomplete", "get_weather", "invalid_arguments"),
        ("call", "get_weather", {"city": "Oslo"}),
    ]
    failed = events[3]
    assert failed.raw == 'get_weather[ARGS]{"city": Tokyo} oops'
    assert failed.arguments == '{"city": '


def test_arguments_must_be_an_object():
    assert summary(parse(mistral, '[TOOL_CALLS]get_weather[ARGS]"Tokyo"')) == [
        ("incomplete", "get_weather", "invalid_arguments")
    ]


def test_truncated_call():
    assert summary(parse(mistral, '[TOOL_CALLS]get_weather[ARGS]{"city": "To')) == [
        ("incomplete", "get_weather", "truncated")
    ]
    assert summary(parse(mistral, "[TOOL_CALLS]get_weather[ARGS]")) == [("incomplete", "get_weather", "truncated")]


def test_interleaved_reasoning_and_calls_in_order():
    text = (
        "[THINK]Tokyo first.[/THINK]"
        + LITERAL
        + "[THINK]Now Paris.[/THINK]"
        + LITERAL.replace("Tokyo", "Paris")
        + "Both done."
    )
    assert summary(parse(magistral, text)) == [
        ("reasoning", "Tokyo first."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Now Paris."),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
        ("text", "Both done."),
    ]


def test_interleaved_with_the_array_shape():
    text = (
        "[THINK]Tokyo first.[/THINK]"
        + LITERAL_ARRAY
        + "[THINK]Now Paris.[/THINK]"
        + LITERAL.replace("Tokyo", "Paris")
        + "Done."
    )
    assert summary(parse(magistral, text)) == [
        ("reasoning", "Tokyo first."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Now Paris."),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
        ("text", "Done."),
    ]


def test_call_inside_reasoning_ends_it():
    text = "[THINK]I need the weather." + LITERAL + "[/THINK]Done."
    assert summary(parse(magistral, text)) == [
        ("reasoning", "I need the weather."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("text", "Done."),
    ]


def test_reasoning_marker_inside_arguments_is_argument_text():
    text = '[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "[THINK]Tokyo"}ok'
    assert summary(parse(magistral, text)) == [("call", "get_weather", {"city": "[THINK]Tokyo"}), ("text", "ok")]


def test_bare_call_list_opening_the_output():
    # A decoder that drops special tokens turns `[TOOL_CALLS][...]` into `[...]`
    # (Dynamo's Mistral-7B v0.3 tests): read as calls when it opens the output and
    # names a declared tool; after prose, or naming no declared tool, it is text.
    bare = ' [{"name": "get_weather", "arguments": {"city": "Tokyo", "days": 3}}]'
    assert summary(parse(mistral, bare)) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    assert summary(parse(mistral, "Sure:" + bare)) == [("text", "Sure:" + bare)]
    answer = '[{"name": "Alice", "age": 30}]'
    assert summary(parse(mistral, answer)) == [("text", answer)]


def test_a_held_bracket_before_a_reasoning_marker_stays_in_order():
    # Found by the conservation property: a `[` that might open a bare call list is
    # held; a `[THINK]` right after it decides that it does not, so it is text first.
    events = parse(magistral, "[/THINK][[THINK]x[/THINK]Answer")
    assert summary(events) == [("text", "["), ("reasoning", "x"), ("text", "Answer")]
