import pytest

from tokenyard.events import Marker, ToolCallReady, ToolCallStart

from .support import WEATHER, parse, splitter_factory, summary

BEGIN, END = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
CALL, ARGS, CALL_END = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"
LITERAL = BEGIN + CALL + "functions.get_weather:0" + ARGS + '{"city":"Tokyo","days":3}' + CALL_END + END
kimi = splitter_factory(None, "kimi_k2", [WEATHER])
k25 = splitter_factory("kimi_k25", "kimi_k2", [WEATHER])


def call(arguments: str, call_id: str = "functions.get_weather:0") -> str:
    return CALL + call_id + ARGS + arguments + CALL_END


def readies(events):
    return [e for e in events if isinstance(e, ToolCallReady)]


def test_reference_literal_keeps_the_model_call_id():
    events = parse(kimi, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    start = next(e for e in events if isinstance(e, ToolCallStart))
    ready = readies(events)[0]
    assert start.id == ready.id == "functions.get_weather:0"
    assert ready.arguments == '{"city":"Tokyo","days":3}'
    assert ready.raw == call('{"city":"Tokyo","days":3}')
    assert [e.text for e in events if isinstance(e, Marker)] == [BEGIN, END]


def test_singular_section_tokens():
    text = "<|tool_call_section_begin|>" + call('{"city":"Tokyo"}') + "<|tool_call_section_end|>"
    events = parse(kimi, text)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo"})]
    markers = [e.text for e in events if isinstance(e, Marker)]
    assert markers == ["<|tool_call_section_begin|>", "<|tool_call_section_end|>"]


def test_prose_several_calls_and_whitespace_between_tokens():
    text = (
        "Both cities.\n"
        + BEGIN
        + "\n"
        + CALL
        + "\nfunctions.get_weather:0"
        + ARGS
        + '\n{"city":"Tokyo"}\n'
        + CALL_END
        + "\n"
        + call('{"city":"Paris"}', "functions.get_weather:1")
        + "\n"
        + END
        + "\nDone."
    )
    events = parse(kimi, text)
    assert summary(events) == [
        ("text", "Both cities."),
        ("call", "get_weather", {"city": "Tokyo"}),
        ("call", "get_weather", {"city": "Paris"}),
        ("text", "Done."),
    ]
    assert [e.id for e in readies(events)] == ["functions.get_weather:0", "functions.get_weather:1"]
    assert readies(events)[0].arguments == '{"city":"Tokyo"}'


def test_id_without_functions_prefix_and_dotted_names():
    text = BEGIN + call("{}", "get_weather:3") + call("{}", "functions.mcp.fs.read:4") + END
    events = parse(kimi, text)
    assert [(e.name, e.id) for e in readies(events)] == [
        ("get_weather", "get_weather:3"),
        ("mcp.fs.read", "functions.mcp.fs.read:4"),
    ]


def test_repeated_model_id_gets_a_fresh_one():
    events = parse(kimi, BEGIN + call('{"city":"A"}') + call('{"city":"B"}') + END)
    ids = [e.id for e in readies(events)]
    assert ids[0] == "functions.get_weather:0" and ids[1] != ids[0]


def test_invalid_arguments_then_a_good_call():
    text = BEGIN + call('{"city": "Tokyo" "days": 3}') + call('{"city": "Oslo"}', "functions.get_weather:1") + END
    assert summary(parse(kimi, text)) == [
        ("incomplete", "get_weather", "invalid_arguments"),
        ("call", "get_weather", {"city": "Oslo"}),
    ]


@pytest.mark.parametrize(
    "text",
    [
        BEGIN + call("{}", "functions.get weather:0") + END,
    ],
)
def test_not_a_call_is_text(text):
    events = parse(kimi, text)
    assert not [e for e in events if isinstance(e, ToolCallStart)]
    assert "".join(e.text for e in events) == text
    # The tokens read as the call's opening are its text; the later ones, stray, are markers.
    assert "<|tool_call_end|>" not in "".join(e.text for e in events if not isinstance(e, Marker))


def test_interleaved_thinking_in_order():
    # kimi_k25 starts inside reasoning; a call section ends it; `<think>` reopens it.
    text = (
        "First Tokyo."
        + BEGIN
        + call('{"city":"Tokyo"}')
        + END
        + "<think>Now Paris.</think>"
        + BEGIN
        + call('{"city":"Paris"}', "functions.get_weather:1")
        + END
        + "Both done."
    )
    assert summary(parse(k25, text)) == [
        ("reasoning", "First Tokyo."),
        ("call", "get_weather", {"city": "Tokyo"}),
        ("reasoning", "Now Paris."),
        ("call", "get_weather", {"city": "Paris"}),
        ("text", "Both done."),
    ]


def test_section_ends_reasoning_without_think_close():
    text = "<think>Check Paris too." + BEGIN + call('{"city":"Paris"}') + END
    events = parse(splitter_factory("kimi_k25", "kimi_k2", [WEATHER], thinking_enabled=False), text)
    assert summary(events) == [("reasoning", "Check Paris too."), ("call", "get_weather", {"city": "Paris"})]


def test_a_section_opener_followed_by_no_call_is_text_whole():
    # No call follows, so the block is no call section: the model's text as written.
    events = parse(kimi, BEGIN + "nothing to call")
    assert not [e for e in events if isinstance(e, ToolCallStart)]
    assert "".join(e.text for e in events if not isinstance(e, Marker)) == BEGIN + "nothing to call"


def test_bare_counter_ids_name_the_tool_or_are_syntax():
    from tokenyard.conversation import ToolSpec

    def tool(name, *keys):
        return ToolSpec(name=name, parameters={"type": "object", "properties": {k: {"type": "string"} for k in keys}})

    text = "Sure. " + BEGIN + call('{"city": "Oslo", "unit": "c"}', "0") + END
    one = splitter_factory(None, "kimi_k2", [tool("get_weather", "city", "unit")])
    events = parse(one, text)
    assert summary(events) == [("text", "Sure."), ("call", "get_weather", {"city": "Oslo", "unit": "c"})]
    assert readies(events)[0].id == "0"
    fits = splitter_factory(None, "kimi_k2", [tool("read_file", "path"), tool("get_weather", "city", "unit")])
    assert summary(parse(fits, text))[1] == ("call", "get_weather", {"city": "Oslo", "unit": "c"})
    # Ambiguous, or no tools at all: no call, and no special token reaches content.
    for make in (
        splitter_factory(None, "kimi_k2", [tool("a", "city", "unit"), tool("b", "city", "unit")]),
        splitter_factory(None, "kimi_k2"),
    ):
        events = parse(make, text)
        assert summary(events) == [("text", "Sure.")]


@pytest.mark.parametrize(
    "stray",
    ["<|tool_calls_section_end|>", "<|tool_call_section_end|>", "<|tool_call_end|>", "<|tool_call_argument_begin|>"],
)
def test_a_stray_special_token_outside_a_call_is_a_marker(stray):
    for make in (kimi, k25):
        events = parse(
            make, "<think>x</think>normal text" + stray + "more" if make is k25 else "normal text" + stray + "more"
        )
        assert [s for s in summary(events) if s[0] == "text"] == [("text", "normal text"), ("text", "more")]
        assert stray in [e.text for e in events if isinstance(e, Marker)]


def test_a_functions_header_without_its_index_is_not_a_call():
    text = (
        BEGIN
        + call('{"city": "Oslo"}', "functions.get_weather.0")
        + call('{"city": "Rome"}', "functions.get_weather:1")
        + END
    )
    assert [s for s in summary(parse(kimi, text)) if s[0] == "call"] == [("call", "get_weather", {"city": "Rome"})]
