from tokenyard.events import Marker, TextDelta

from .support import WEATHER, parse, splitter_factory, summary

OPEN, C, S = "<|open|>", "<|close|>", "<|sep|>"
RESPONSE = f"{OPEN}response{S}"
END = f"{C}response{S}"
MESSAGE_END = f"{C}message{S}"
k3 = splitter_factory("kimi_k3", "kimi_k3", [WEATHER])
k3_tools_only = splitter_factory(None, "kimi_k3", [WEATHER])
k3_reasoning_only = splitter_factory("kimi_k3", None)


def call(*arguments: tuple[str, str, str], tool: str = "get_weather") -> str:
    body = "".join(f'{OPEN}argument key="{k}" type="{t}"{S}{v}{C}argument{S}' for k, t, v in arguments)
    return f'{OPEN}call tool="{tool}" index="1"{S}{body}{C}call{S}'


def tools(*calls: str) -> str:
    return f"{OPEN}tools{S}" + "".join(calls) + f"{C}tools{S}"


def test_think_response_and_tools_channels():
    text = (
        "Plan it"
        + f"{C}think{S}"
        + RESPONSE
        + "On it."
        + END
        + tools(call(("city", "string", "Tokyo"), ("days", "number", "3")))
        + MESSAGE_END
    )
    assert summary(parse(k3, text)) == [
        ("reasoning", "Plan it"),
        ("text", "On it."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_wrappers_never_reach_content_with_either_parser_alone():
    text = RESPONSE + "Hello" + END + MESSAGE_END
    for make in (k3_tools_only, splitter_factory("kimi_k3", None, thinking_enabled=False)):
        events = parse(make, text)
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello"
        assert "".join(e.text for e in events if isinstance(e, Marker)) == RESPONSE + END + MESSAGE_END


def test_output_starts_inside_the_think_channel_unless_thinking_is_off():
    assert summary(parse(k3_reasoning_only, "still thinking")) == [("reasoning", "still thinking")]
    off = splitter_factory("kimi_k3", None, thinking_enabled=False)
    assert summary(parse(off, "answer")) == [("text", "answer")]


def test_markers_inside_a_string_value_stay_in_the_value():
    value = f"a {C}call{S} b {C}tools{S} c {OPEN}argument x{S} d {C}message{S} e"
    events = parse(k3_tools_only, tools(call(("city", "string", value))))
    assert summary(events) == [("call", "get_weather", {"city": value})]


def test_non_json_value_of_a_typed_argument_is_kept_as_text():
    events = parse(k3_tools_only, tools(call(("days", "number", "three"))))
    assert summary(events) == [("call", "get_weather", {"days": "three"})]


def test_end_of_output_policy():
    complete = tools(call(("city", "string", "Oslo")))[: -len(f"{C}tools{S}")]
    assert summary(parse(k3_tools_only, complete)) == [("call", "get_weather", {"city": "Oslo"})]
    cut_value = f'{OPEN}tools{S}{OPEN}call tool="get_weather" index="1"{S}{OPEN}argument key="city" type="string"{S}Os'
    assert summary(parse(k3_tools_only, cut_value)) == [("incomplete", "get_weather", "truncated")]
    # Between arguments, with every required one present: recovered; else truncated.
    cut_call = cut_value + f"lo{C}argument{S}"
    assert summary(parse(k3_tools_only, cut_call)) == [("call", "get_weather", {"city": "Oslo"})]
    no_city = f'{OPEN}tools{S}{OPEN}call tool="get_weather" index="1"{S}{OPEN}argument key="days" type="number"{S}2{C}argument{S}'
    assert summary(parse(k3_tools_only, no_city)) == [("incomplete", "get_weather", "truncated")]


def test_call_without_a_tool_name_is_syntax_with_no_destination():
    text = "Hi " + f'{OPEN}tools{S}{OPEN}call index="1"{S}{C}call{S}{C}tools{S}'
    events = parse(k3_tools_only, text)
    assert summary(events) == [("text", "Hi")]


def test_a_name_no_api_allows_is_still_the_call_the_model_made():
    # The head is delimited by special tokens and the name quoted: the call is
    # delivered (to an undeclared tool), never dropped with its arguments.
    for name, written in [("a&b", "a&amp;b"), ('a&b"c', "a&amp;b&quot;c"), ("calc<beta", "calc<beta")]:
        text = "Hi " + tools(call(("q", "string", "x"), tool=written))
        assert summary(parse(k3_tools_only, text)) == [("text", "Hi"), ("call", name, {"q": "x"})]
    # A name of only whitespace or with a control character names nothing.
    for written in [" ", "a\x01b"]:
        text = "Hi " + tools(call(("q", "string", "x"), tool=written))
        assert summary(parse(k3_tools_only, text)) == [("text", "Hi")]


def test_a_stray_or_cut_off_special_token_outside_a_channel_is_a_marker():
    for text, content in [
        ("all done<|open|>", "all done"),
        ("I am delegating.<|close|>response", "I am delegating."),
        ("done<|open|>tool", "done"),
        # (the space before a marker is block-edge whitespace, reported with the marker)
        ("calls open with <|open|>call, then attributes", "calls open with, then attributes"),
    ]:
        events = parse(k3_tools_only, text)
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == content
        assert "".join(e.text for e in events) == text


def test_think_close_without_its_separator_still_ends_reasoning():
    text = f"thought{C}think{RESPONSE}reply{END}"
    assert summary(parse(k3_reasoning_only, text)) == [("reasoning", "thought"), ("text", "reply")]


def test_reasoning_cut_off_inside_a_marker_ends_in_a_marker():
    for text in (f"deep thought{C}", f"deep thought{C}think", f"deep thought{C}thi"):
        events = parse(k3_reasoning_only, text)
        assert summary(events) == [("reasoning", "deep thought")]
        assert "".join(e.text for e in events) == text
    # A `<` that starts no special token stays reasoning.
    assert summary(parse(k3_reasoning_only, "a < b and <|x")) == [("reasoning", "a < b and <|x")]
