"""DSML tool calls: deepseek_v3_2 (`function_calls` block) and deepseek_v4
(`tool_calls` block, also a bare invoke)."""

import pytest

from tokenyard.conversation import ToolSpec
from tokenyard.events import Marker, TextDelta, ToolCallDelta, ToolCallIncomplete, ToolCallReady, ToolCallStart

from .support import WEATHER, parse, run_chunks, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

B = "｜"  # U+FF5C


def invoke(name: str, *params: tuple[str, str, str]) -> str:
    body = "".join(f'<{B}DSML{B}parameter name="{k}" string="{s}">{v}</{B}DSML{B}parameter>\n' for k, s, v in params)
    return f'<{B}DSML{B}invoke name="{name}">\n{body}</{B}DSML{B}invoke>\n'


def block(kind: str, *invokes: str) -> str:
    return f"<{B}DSML{B}{kind}>\n" + "".join(invokes) + f"</{B}DSML{B}{kind}>"


TOKYO = invoke("get_weather", ("city", "true", "Tokyo"), ("days", "false", "3"))
PARIS = invoke("get_weather", ("city", "true", "Paris"), ("days", "false", "2"))

v32 = splitter_factory(None, "deepseek_v3_2", [WEATHER])
v4 = splitter_factory(None, "deepseek_v4", [WEATHER])
v32_reasoning = splitter_factory("deepseek_v3_2", "deepseek_v3_2", [WEATHER])
v4_reasoning = splitter_factory("deepseek_v4", "deepseek_v4", [WEATHER])

EDIT = ToolSpec(
    name="edit",
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "title": {"type": "string"},
            "options": {"type": "object"},
            "lines": {"type": "array"},
            "force": {"type": "boolean"},
            "count": {"type": "integer"},
        },
    },
)


@pytest.mark.parametrize("name", ["deepseek_v3_2", "deepseek_v4"])
def test_reference_literal(name):
    text = TOOL_EXAMPLES[name][1]
    events = parse(splitter_factory(None, name, [WEATHER]), text)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = next(e for e in events if isinstance(e, ToolCallReady))
    assert ready.arguments == '{"city": "Tokyo", "days": 3}'
    assert ready.raw.startswith(f'<{B}DSML{B}invoke name="get_weather">') and ready.raw.endswith(f"</{B}DSML{B}invoke>")


def test_block_names_are_per_version():
    # Each version's outer block is its own; the other's tags are damaged syntax
    # (markers, never content), and the invoke inside is still the call.
    for make, other in ((v32, "tool_calls"), (v4, "function_calls")):
        events = parse(make, block(other, TOKYO))
        assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
        assert f"<{B}DSML{B}{other}>" in "".join(e.text for e in events if isinstance(e, Marker))


def test_prose_then_several_invokes_in_one_block_then_prose():
    text = "Checking both.\n\n" + block("function_calls", TOKYO, PARIS) + "\nDone."
    assert summary(parse(v32, text)) == [
        ("text", "Checking both."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
        ("text", "Done."),
    ]


def test_two_blocks():
    text = block("tool_calls", TOKYO) + "\n" + block("tool_calls", PARIS)
    assert [s[0] for s in summary(parse(v4, text))] == ["call", "call"]


def test_string_true_streams_before_the_parameter_closes():
    splitter = v32()
    events = splitter.feed(f'<{B}DSML{B}function_calls>\n<{B}DSML{B}invoke name="get_weather">\n')
    events += splitter.feed(f'<{B}DSML{B}parameter name="city" string="true">Tok')
    assert any(isinstance(e, ToolCallStart) for e in events)
    streamed = "".join(e.arguments for e in events if isinstance(e, ToolCallDelta))
    assert streamed == '{"city": "Tok'


def test_string_hint_types_strings_and_false_is_typed():
    text = block(
        "function_calls",
        invoke(
            "edit",
            ("path", "true", "a.py"),
            ("count", "true", "7"),  # said string, but the schema allows only an integer: 7
            ("options", "false", '{"a": [1, 2.5, null]}'),
            ("lines", "false", '["x", "y"]'),
            ("force", "false", "true"),
            ("extra", "false", "12"),  # undeclared, but string="false": a JSON value
            ("note", "false", "plain words"),  # not JSON after all: kept as written
            ("title", "false", '"quoted"'),  # a string parameter sent as JSON: decoded
        ),
    )
    assert summary(parse(splitter_factory(None, "deepseek_v3_2", [EDIT]), text)) == [
        (
            "call",
            "edit",
            {
                "path": "a.py",
                "count": 7,
                "options": {"a": [1, 2.5, None]},
                "lines": ["x", "y"],
                "force": True,
                "extra": 12,
                "note": "plain words",
                "title": "quoted",
            },
        )
    ]


def test_unicode_quotes_backslashes_newlines():
    value = 'line1\n  東京 "q" \\ 🌸\n'
    text = block("function_calls", invoke("get_weather", ("city", "true", value)))
    events = parse(v32, text)
    assert summary(events) == [("call", "get_weather", {"city": value})]


def test_no_parameters():
    text = block("function_calls", f'<{B}DSML{B}invoke name="get_weather">\n</{B}DSML{B}invoke>\n')
    events = parse(v32, text)
    assert summary(events) == [("call", "get_weather", {})]
    assert next(e for e in events if isinstance(e, ToolCallReady)).arguments == "{}"


def test_json_body_instead_of_parameters():
    body = f'<{B}DSML{B}invoke name="get_weather">\n{{"city": "Tokyo", "days": 3}}\n</{B}DSML{B}invoke>\n'
    events = parse(v4, block("tool_calls", body))
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    assert next(e for e in events if isinstance(e, ToolCallReady)).arguments == '{"city": "Tokyo", "days": 3}'


def test_invalid_json_body_is_reported_not_dispatched():
    body = f'<{B}DSML{B}invoke name="get_weather">\n{{"city": "Tokyo",}}\n</{B}DSML{B}invoke>\n'
    text = block("tool_calls", body, PARIS) + "\nafter"
    assert summary(parse(v4, text)) == [
        ("incomplete", "get_weather", "invalid_arguments"),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
        ("text", "after"),
    ]


def test_invalid_json_body_at_the_end_of_output():
    text = f'<{B}DSML{B}tool_calls>\n<{B}DSML{B}invoke name="get_weather">\n{{"city": ]'
    assert summary(parse(v4, text)) == [("incomplete", "get_weather", "invalid_arguments")]


@pytest.mark.parametrize(
    "cut",
    [
        '"true">Tok',  # inside a string value
        '"false">',  # inside a typed value
        "</｜DSML｜parameter>\n",  # between parameters: the required `city` is there
        "</｜DSML｜invoke>\n",  # after the call: it is complete
    ],
)
def test_truncated(cut):
    full = block("function_calls", TOKYO)
    text = full[: full.index(cut) + len(cut)]
    expected = {
        "</｜DSML｜invoke>\n": [("call", "get_weather", {"city": "Tokyo", "days": 3})],
        "</｜DSML｜parameter>\n": [("call", "get_weather", {"city": "Tokyo"})],
    }.get(cut, [("incomplete", "get_weather", "truncated")])
    assert summary(parse(v32, text)) == expected


def test_end_of_output_between_parameters_without_a_required_one_is_truncated():
    text = (
        f'<{B}DSML{B}function_calls>\n<{B}DSML{B}invoke name="get_weather">\n'
        f'<{B}DSML{B}parameter name="days" string="false">3</{B}DSML{B}parameter>\n'
    )
    assert summary(parse(v32, text)) == [("incomplete", "get_weather", "truncated")]


def test_not_a_call_is_text():
    text = f"<{B}DSML{B}function_calls> is how the block starts, and <{B}DSML{B}invoke name=get weather> is not a name"
    assert summary(parse(v32, text)) == [("text", text)]


def test_tags_inside_a_value_are_the_values_text():
    # Only `</parameter>` ends a value; a value that never closes is never a call.
    value = f'see <{B}DSML{B}invoke name="x"> and </{B}DSML{B}function_calls> here'
    text = (
        f'<{B}DSML{B}function_calls>\n<{B}DSML{B}invoke name="get_weather">\n'
        f'<{B}DSML{B}parameter name="city" string="true">{value}</{B}DSML{B}parameter>\n'
        f"</{B}DSML{B}invoke>\n</{B}DSML{B}function_calls>"
    )
    assert summary(parse(v32, text)) == [("call", "get_weather", {"city": value})]
    cut = (
        f'<{B}DSML{B}function_calls>\n<{B}DSML{B}invoke name="get_weather">\n'
        f'<{B}DSML{B}parameter name="city" string="true">Tokyo\n</{B}DSML{B}invoke></{B}DSML{B}function_calls>'
    )
    assert summary(parse(v32, cut)) == [("incomplete", "get_weather", "truncated")]


def test_v4_bare_invoke_without_block():
    text = "Let me look.\n" + TOKYO + PARIS + "Done."
    assert summary(parse(v4, text)) == [
        ("text", "Let me look."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
        ("text", "Done."),
    ]


def test_v4_reasoning_and_calls_interleaved_in_order():
    text = (
        "<think>Tokyo first.</think>\n"
        + block("tool_calls", TOKYO)
        + "\n<think>Now Paris.</think>\n"
        + block("tool_calls", PARIS)
        + "\nBoth done."
    )
    assert summary(parse(v4_reasoning, text)) == [
        ("reasoning", "Tokyo first."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Now Paris."),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
        ("text", "Both done."),
    ]


def test_v4_reasoning_ends_implicitly_at_block_or_bare_invoke():
    text = "<think>Tokyo first.\n" + block("tool_calls", TOKYO) + "\n<think>Now Paris.\n" + PARIS + "Both done."
    assert summary(parse(v4_reasoning, text)) == [
        ("reasoning", "Tokyo first."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Now Paris."),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
        ("text", "Both done."),
    ]


def test_v3_2_forced_reasoning_and_a_call_inside_reasoning():
    text = (
        "Thinking.</think>\n\n"
        + block("function_calls", TOKYO)
        + "\n<think>Hmm, "
        + block("function_calls", PARIS)
        + "\nok."
    )
    assert summary(parse(v32_reasoning, text)) == [
        ("reasoning", "Thinking."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Hmm,"),
        ("call", "get_weather", {"city": "Paris", "days": 2}),
        ("text", "ok."),
    ]


def test_incomplete_is_followed_by_nothing_else_of_that_call():
    events = parse(v32, block("function_calls", TOKYO)[:60])
    assert [type(e) for e in events if isinstance(e, (ToolCallReady, ToolCallIncomplete))] == [ToolCallIncomplete]


def test_json_null_for_a_string_parameter_stays_the_string():
    from tokenyard.conversation import ToolSpec

    note = ToolSpec(name="note", parameters={"type": "object", "properties": {"text": {"type": "string"}}})
    text = (
        f'<{B}DSML{B}function_calls>\n<{B}DSML{B}invoke name="note">\n'
        f'<{B}DSML{B}parameter name="text" string="false">null</{B}DSML{B}parameter>\n'
        f"</{B}DSML{B}invoke>\n</{B}DSML{B}function_calls>"
    )
    assert summary(parse(splitter_factory("deepseek_v3_2", "deepseek_v3_2", [note]), text)) == [
        ("call", "note", {"text": "null"})
    ]


def test_string_hint_yields_to_a_schema_that_allows_no_string():
    from tokenyard.conversation import ToolSpec

    score = ToolSpec(
        name="score",
        parameters={"type": "object", "properties": {"value": {"type": "integer"}, "label": {"type": "string"}}},
    )
    text = (
        f'<{B}DSML{B}function_calls>\n<{B}DSML{B}invoke name="score">\n'
        f'<{B}DSML{B}parameter name="value" string="true">42</{B}DSML{B}parameter>\n'
        f'<{B}DSML{B}parameter name="label" string="true">42</{B}DSML{B}parameter>\n'
        f"</{B}DSML{B}invoke>\n</{B}DSML{B}function_calls>"
    )
    assert summary(parse(splitter_factory("deepseek_v3_2", "deepseek_v3_2", [score]), text)) == [
        ("call", "score", {"value": 42, "label": "42"})
    ]


def test_a_damaged_dsml_tag_outside_a_call_is_a_marker_not_content():
    call = (
        f'<{B}DSML{B}function_calls>\n<{B}DSML{B}invoke name="get_weather">\n'
        f'<{B}DSML{B}parameter name="city" string="true">Tokyo</{B}DSML{B}parameter>\n'
        f"</{B}DSML{B}invoke>\n</{B}DSML{B}function_calls>"
    )
    for damaged in (f"<{B}DSML{B}functioncalls>", f"<{B}DSML{B} SugarPanel>", f"<{B}DSML{B}function_calls-ok scan"):
        events = parse(v32, "Checking.\n\n" + damaged + "\n" + call)
        assert summary(events) == [("text", "Checking."), ("call", "get_weather", {"city": "Tokyo"})]
        assert damaged in "".join(e.text for e in events if isinstance(e, Marker))


def test_a_self_closing_invoke_is_a_call_with_no_arguments():
    text = (
        f'<{B}DSML{B}function_calls>\n<{B}DSML{B}invoke name="get_weather"/>\n'
        f'<{B}DSML{B}invoke name="get_weather">\n'
        f'<{B}DSML{B}parameter name="city" string="true">Oslo</{B}DSML{B}parameter>\n'
        f"</{B}DSML{B}invoke>\n</{B}DSML{B}function_calls>"
    )
    assert summary(parse(v32, text)) == [("call", "get_weather", {}), ("call", "get_weather", {"city": "Oslo"})]


@pytest.mark.parametrize(
    "quote",
    [
        "Example:\n```xml\n{call}\n```\n",
        "Example:\n~~~\n{call}\n~~~\n",
        "Example: `{call}`\n",
    ],
)
def test_a_quoted_call_is_text_and_the_real_call_after_it_is_a_call(quote):
    def call(city):
        return (
            f'<{B}DSML{B}function_calls>\n<{B}DSML{B}invoke name="get_weather">\n'
            f'<{B}DSML{B}parameter name="city" string="true">{city}</{B}DSML{B}parameter>\n'
            f"</{B}DSML{B}invoke>\n</{B}DSML{B}function_calls>"
        )

    quoted = quote.format(call=call("literal"))
    for chunks in (1, 3, len(quoted) + 200):
        text = quoted + call("Oslo")
        events = run_chunks(v32, [text[i : i + chunks] for i in range(0, len(text), chunks)])
        assert [s for s in summary(events) if s[0] == "call"] == [("call", "get_weather", {"city": "Oslo"})]
        assert quoted.strip() in "".join(e.text for e in events if isinstance(e, TextDelta))


def test_an_unquoted_call_after_balanced_code_spans_is_a_call():
    text = (
        "Run `ls` and `pwd` first.\n\n"
        f'<{B}DSML{B}function_calls>\n<{B}DSML{B}invoke name="get_weather">\n'
        f'<{B}DSML{B}parameter name="city" string="true">Oslo</{B}DSML{B}parameter>\n'
        f"</{B}DSML{B}invoke>\n</{B}DSML{B}function_calls>"
    )
    assert summary(parse(v32, text))[-1] == ("call", "get_weather", {"city": "Oslo"})


def test_json_marked_value_that_fits_no_schema_type_stays_json_unless_a_string_is_allowed():
    search = ToolSpec(
        name="search",
        parameters={"type": "object", "properties": {"topn": {"type": "integer"}, "text": {"type": "string"}}},
    )
    text = (
        f'<{B}DSML{B}function_calls>\n<{B}DSML{B}invoke name="search">\n'
        f'<{B}DSML{B}parameter name="topn" string="false">{{"n": 3}}</{B}DSML{B}parameter>\n'
        f'<{B}DSML{B}parameter name="text" string="false">{{"n": 3}}</{B}DSML{B}parameter>\n'
        f"</{B}DSML{B}invoke>\n</{B}DSML{B}function_calls>"
    )
    assert summary(parse(splitter_factory(None, "deepseek_v3_2", [search]), text)) == [
        ("call", "search", {"topn": {"n": 3}, "text": '{"n": 3}'})
    ]


@pytest.mark.parametrize("make", [v32, v4])
def test_the_end_of_sentence_token_is_a_marker_not_text(make):
    assert summary(parse(make, "Done.<｜end▁of▁sentence｜>")) == [("text", "Done.")]
