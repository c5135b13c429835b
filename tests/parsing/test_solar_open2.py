from tokenyard.conversation import ToolSpec
from tokenyard.events import Marker, ToolCallDelta

from .support import WEATHER, parse, run_chunks, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["solar_open2"][1]
CALL = (
    "<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|>Seoul<|tool_arg:end|>\n<|tool_call:end|>"
)
solar = splitter_factory("solar_open2", "solar_open2", [WEATHER])
answer = splitter_factory("solar_open2", "solar_open2", [WEATHER], thinking_enabled=False)


def markers(events):
    return [e.text for e in events if type(e) is Marker]


def test_reasoning_then_the_reference_call():
    events = parse(solar, "Weather first.<|think:end|>" + LITERAL)
    assert summary(events) == [("reasoning", "Weather first."), ("call", "get_weather", {"city": "Tokyo", "days": 3})]
    assert "<|think:end|>" in markers(events)


def test_text_around_calls_is_kept():
    text = "Let me check." + CALL + "\n" + CALL + " Done."
    assert summary(parse(answer, text)) == [
        ("text", "Let me check."),
        ("call", "get_weather", {"city": "Seoul"}),
        ("call", "get_weather", {"city": "Seoul"}),
        ("text", "Done."),
    ]


def test_a_call_inside_reasoning_ends_it():
    assert summary(parse(solar, "I should call it." + CALL)) == [
        ("reasoning", "I should call it."),
        ("call", "get_weather", {"city": "Seoul"}),
    ]


def test_values_are_typed_by_the_schema_and_strings_otherwise():
    tool = ToolSpec(
        name="f",
        parameters={"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}},
    )
    text = (
        "<|tool_call:start|>f\n<|tool_arg:start|>n<|tool_arg:value|>7<|tool_arg:end|>\n"
        "<|tool_arg:start|>s<|tool_arg:value|>7<|tool_arg:end|>\n"
        "<|tool_arg:start|>x<|tool_arg:value|>7<|tool_arg:end|>\n<|tool_call:end|>"
    )
    typed = splitter_factory(None, "solar_open2", [tool])
    assert summary(parse(typed, text)) == [("call", "f", {"n": 7, "s": "7", "x": "7"})]


def test_a_string_value_streams_before_it_ends():
    text = "<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|>San Francisco"
    events = run_chunks(answer, [text[: text.index("San")], "San ", "Francisco"])
    streamed = "".join(e.arguments for e in events if type(e) is ToolCallDelta)
    assert streamed.startswith('{"city": "San Francisco')


def test_the_formats_tokens_inside_a_value_are_its_text():
    value = "a <|tool_call:end|> b <|tool_arg:start|>x<|tool_arg:value|> <|tool_call:start|>c"
    text = f"<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|>{value}<|tool_arg:end|>\n<|tool_call:end|>"
    assert summary(parse(answer, text)) == [("call", "get_weather", {"city": value})]


def test_a_dropped_call_end_is_ended_by_the_next_call():
    first = "<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|>Paris<|tool_arg:end|>\n"
    assert summary(parse(answer, first + CALL)) == [
        ("call", "get_weather", {"city": "Paris"}),
        ("call", "get_weather", {"city": "Seoul"}),
    ]


def test_a_call_missing_a_required_argument_is_not_recovered_at_the_next_call():
    tool = ToolSpec(
        name="search",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    )
    text = "<|tool_call:start|>search\n" + CALL
    events = parse(splitter_factory(None, "solar_open2", [tool, WEATHER]), text)
    assert summary(events) == [("incomplete", "search", "truncated"), ("call", "get_weather", {"city": "Seoul"})]


def test_a_broken_argument_fails_only_its_own_call():
    text = "<|tool_call:start|>get_weather\n<|tool_arg:start|>ci" + CALL
    assert summary(parse(answer, text)) == [
        ("incomplete", "get_weather", "invalid_arguments"),
        ("call", "get_weather", {"city": "Seoul"}),
    ]


def test_end_of_output_policy():
    cut = CALL[: CALL.index("Seoul") + 3]
    assert summary(parse(answer, "Checking." + cut)) == [
        ("text", "Checking."),
        ("incomplete", "get_weather", "truncated"),
    ]
    # Only the call's closing token is missing: the arguments are complete.
    whole = CALL[: CALL.index("<|tool_call:end|>")]
    assert summary(parse(answer, whole)) == [("call", "get_weather", {"city": "Seoul"})]


def test_stray_tokens_are_markers_never_content():
    events = parse(answer, "a<|tool_arg:end|>b<|tool_call:start|><|tool_call:end|>c")
    assert summary(events) == [("text", "a"), ("text", "b"), ("text", "c")]
    assert markers(events) == ["<|tool_arg:end|>", "<|tool_call:start|><|tool_call:end|>"]


def test_a_sentinel_prefix_in_text_is_text():
    assert summary(parse(answer, "see <|tool_call: and <|to")) == [("text", "see <|tool_call: and <|to")]


SEARCH = ToolSpec(name="search", parameters={"type": "object", "properties": {"query": {"type": "string"}}})
both = splitter_factory(None, "solar_open2", [SEARCH, WEATHER])


def test_a_dropped_argument_end_is_read_where_the_next_tag_shows_it():
    # The call's closing token, then the next call of a declared tool.
    dropped = "<|tool_call:start|>search\n<|tool_arg:start|>query<|tool_arg:value|>vLLM<|tool_call:end|>" + CALL
    # The next call's opening token, both closing tokens dropped.
    both_dropped = "<|tool_call:start|>search\n<|tool_arg:start|>query<|tool_arg:value|>vLLM" + CALL
    for text in (dropped, both_dropped):
        assert summary(parse(both, text)) == [
            ("call", "search", {"query": "vLLM"}),
            ("call", "get_weather", {"city": "Seoul"}),
        ]
    # A declared parameter the call has not given yet.
    text = (
        "<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|>Oslo"
        "<|tool_arg:start|>days<|tool_arg:value|>2<|tool_arg:end|>\n<|tool_call:end|>"
    )
    assert summary(parse(both, text)) == [("call", "get_weather", {"city": "Oslo", "days": 2})]
    # The call's closing token that ends the output.
    text = "<|tool_call:start|>search\n<|tool_arg:start|>query<|tool_arg:value|>vLLM<|tool_call:end|>\n"
    assert summary(parse(both, text)) == [("call", "search", {"query": "vLLM"})]


def test_tags_that_do_not_show_a_dropped_end_stay_in_the_value():
    value = "<|tool_call:end|>then<|tool_call:start|>not_a_tool\n<|tool_arg:start|>query<|tool_arg:value|>"
    text = f"<|tool_call:start|>search\n<|tool_arg:start|>query<|tool_arg:value|>{value}<|tool_arg:end|>\n<|tool_call:end|>"
    assert summary(parse(both, text)) == [("call", "search", {"query": value})]


def test_a_repeated_key_keeps_its_first_value():
    text = (
        "<|tool_call:start|>search\n<|tool_arg:start|>query<|tool_arg:value|>first<|tool_arg:end|>\n"
        "<|tool_arg:start|>query<|tool_arg:value|>second<|tool_arg:end|>\n<|tool_call:end|>"
    )
    assert summary(parse(both, text)) == [("call", "search", {"query": "first"})]


def test_a_key_begun_again_drops_the_abandoned_one():
    text = "<|tool_call:start|>get_weather\n<|tool_arg:start|>ci<|tool_arg:start|>city<|tool_arg:value|>Seoul<|tool_arg:end|>\n<|tool_call:end|>"
    assert summary(parse(both, text)) == [("call", "get_weather", {"city": "Seoul"})]


def test_a_call_head_cut_short_by_the_next_call_is_syntax():
    events = parse(answer, "Hmm. <|tool_call:start|>get_weat" + CALL)
    assert summary(events) == [("text", "Hmm."), ("call", "get_weather", {"city": "Seoul"})]
    assert markers(events)[0] == " <|tool_call:start|>get_weat"
