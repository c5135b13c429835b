import json

import pytest

from tokenyard.events import Marker, ToolCallDelta, ToolCallIncomplete, ToolCallReady, ToolCallStart

from .support import WEATHER, parse, run_chunks, splitter_factory, summary

LITERAL = (
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city":"Tokyo","days":3}<|call|>'
)
ANALYSIS = "<|channel|>analysis<|message|>The user wants the weather.<|end|>"
FINAL = "<|start|>assistant<|channel|>final<|message|>Sunny, 24°C.<|return|>"

harmony = splitter_factory("gpt_oss", "harmony", [WEATHER])


def call(city: str) -> str:
    return LITERAL.replace("Tokyo", city)


def calls(events):
    return [e for e in events if isinstance(e, (ToolCallReady, ToolCallIncomplete))]


def test_reference_literal():
    events = parse(harmony, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = calls(events)[0]
    assert ready.arguments == '{"city":"Tokyo","days":3}'
    assert ready.raw == LITERAL
    assert ready.declared is True


def test_analysis_then_final():
    events = parse(harmony, ANALYSIS + FINAL)
    assert summary(events) == [("reasoning", "The user wants the weather."), ("text", "Sunny, 24°C.")]
    assert [e.text for e in events if isinstance(e, Marker)] == [
        "<|channel|>analysis<|message|>",
        "<|end|><|start|>assistant<|channel|>final<|message|>",
        "<|return|>",
    ]


def test_interleaved_order():
    text = (
        ANALYSIS
        + call("Tokyo")
        + "<|start|>assistant<|channel|>analysis<|message|>Now Paris.<|end|>"
        + call("Paris")
        + FINAL
    )
    assert summary(parse(harmony, text)) == [
        ("reasoning", "The user wants the weather."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Now Paris."),
        ("call", "get_weather", {"city": "Paris", "days": 3}),
        ("text", "Sunny, 24°C."),
    ]


def test_recipient_before_channel():
    text = '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Oslo"}<|call|>'
    events = parse(harmony, ANALYSIS + text)
    assert summary(events) == [("reasoning", "The user wants the weather."), ("call", "get_weather", {"city": "Oslo"})]
    assert calls(events)[0].raw == text


def test_recipient_right_after_the_prompts_start_assistant():
    # The prompt ends with `<|start|>assistant`; the model goes on with ` to=...`.
    text = ' to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{"city":"Oslo"}<|call|>'
    events = parse(harmony, text)
    assert summary(events) == [("call", "get_weather", {"city": "Oslo"})]
    assert calls(events)[0].raw == text


def test_preamble_commentary_is_text():
    text = ANALYSIS + "<|start|>assistant<|channel|>commentary<|message|>Let me check.<|end|>" + call("Rome")
    assert summary(parse(harmony, text)) == [
        ("reasoning", "The user wants the weather."),
        ("text", "Let me check."),
        ("call", "get_weather", {"city": "Rome", "days": 3}),
    ]


def test_missing_start_assistant_at_the_beginning_and_between_messages():
    text = "<|channel|>analysis<|message|>Think.<|end|><|channel|>final<|message|>Answer."
    assert summary(parse(harmony, text)) == [("reasoning", "Think."), ("text", "Answer.")]


def test_next_header_without_end_token_closes_the_body():
    text = "<|channel|>analysis<|message|>Think.<|start|>assistant<|channel|>final<|message|>Answer.<|return|>"
    assert summary(parse(harmony, text)) == [("reasoning", "Think."), ("text", "Answer.")]


def test_output_without_harmony_is_text():
    assert summary(parse(harmony, "Just an answer, <b>bold</b> to=me.")) == [
        ("text", "Just an answer, <b>bold</b> to=me.")
    ]


def test_prose_before_a_header_is_text():
    text = "Hello." + FINAL
    assert summary(parse(harmony, text)) == [("text", "Hello."), ("text", "Sunny, 24°C.")]


def test_a_channel_word_between_messages_is_header_syntax():
    # gpt-oss writes `<|call|>commentary<|channel|>...` (SGLang's filler cases): after an
    # end token only a header may stand, so the word is part of one.
    text = call("Oslo") + "commentary" + FINAL
    events = parse(harmony, text)
    assert summary(events) == [("call", "get_weather", {"city": "Oslo", "days": 3}), ("text", "Sunny, 24°C.")]
    assert any(isinstance(e, Marker) and e.text.startswith("commentary<|start|>") for e in events)
    # Prose there (not the role or a channel name before a header) stays text.
    assert summary(parse(harmony, ANALYSIS + "Done." + FINAL)) == [
        ("reasoning", "The user wants the weather."),
        ("text", "Done."),
        ("text", "Sunny, 24°C."),
    ]
    assert summary(parse(harmony, ANALYSIS + "commentary")) == [
        ("reasoning", "The user wants the weather."),
        ("text", "commentary"),
    ]


def test_broken_header_is_text():
    text = "<|channel|>final oops\nnot a header<|end|>"
    events = parse(harmony, text)
    assert summary(events) == [("text", "<|channel|>final oops\nnot a header")]


def test_header_cut_at_end_of_output_is_a_marker():
    events = parse(harmony, ANALYSIS + "<|start|>assistant<|channel|>fin")
    assert summary(events) == [("reasoning", "The user wants the weather.")]
    assert events[-1] == Marker("<|end|><|start|>assistant<|channel|>fin")


def test_header_abandoned_for_the_next_one_is_a_marker():
    # gpt-oss sometimes opens `commentary to=assistant` and starts over (llama.cpp's edge cases).
    text = (
        "<|channel|>commentary to=assistant" + ANALYSIS + "<|start|>assistant<|channel|>commentary to=assistant" + FINAL
    )
    events = parse(harmony, text)
    assert summary(events) == [("reasoning", "The user wants the weather."), ("text", "Sunny, 24°C.")]
    assert events[0] == Marker("<|channel|>commentary to=assistant<|channel|>analysis<|message|>")


def test_prose_starting_like_a_recipient_is_text():
    assert summary(parse(harmony, " to=do: milk, eggs")) == [("text", "to=do: milk, eggs")]


def test_thinking_disabled_still_honours_analysis():
    make = splitter_factory("gpt_oss", "harmony", [WEATHER], thinking_enabled=False)
    assert summary(parse(make, ANALYSIS + FINAL)) == [
        ("reasoning", "The user wants the weather."),
        ("text", "Sunny, 24°C."),
    ]


def test_several_calls_back_to_back():
    text = call("Tokyo") + call("Paris") + call("Lima")
    events = parse(harmony, text)
    assert summary(events) == [("call", "get_weather", {"city": c, "days": 3}) for c in ("Tokyo", "Paris", "Lima")]
    assert len({e.id for e in calls(events)}) == 3


def test_empty_body_is_a_call_without_arguments():
    text = "<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|><|call|>"
    events = parse(harmony, text)
    assert summary(events) == [("call", "get_weather", {})]
    assert calls(events)[0].arguments == "{}"


def test_whitespace_around_arguments_stays_in_raw():
    text = '<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>\n {"city":"Oslo"} \n<|call|>'
    events = parse(harmony, text)
    assert calls(events)[0].arguments == '{"city":"Oslo"}'
    assert calls(events)[0].raw == text


def test_arguments_stream_before_the_call_ends():
    events = run_chunks(harmony, list(LITERAL))
    kinds = [type(e) for e in events]
    start = kinds.index(ToolCallStart)
    ready = kinds.index(ToolCallReady)
    deltas = [e.arguments for e in events if isinstance(e, ToolCallDelta)]
    assert start < kinds.index(ToolCallDelta) < ready
    assert len(deltas) > 5
    assert "".join(deltas) == '{"city":"Tokyo","days":3}'


def test_call_ended_by_end_of_output_is_ready():
    # An engine that strips the `<|call|>` stop token.
    text = LITERAL[: -len("<|call|>")]
    assert summary(parse(harmony, text)) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]


def test_final_without_return_token():
    assert summary(parse(harmony, ANALYSIS + "<|start|>assistant<|channel|>final<|message|>Done")) == [
        ("reasoning", "The user wants the weather."),
        ("text", "Done"),
    ]


def test_truncated_call():
    text = ANALYSIS + '<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>{"city":"Tok'
    events = parse(harmony, text)
    assert summary(events) == [("reasoning", "The user wants the weather."), ("incomplete", "get_weather", "truncated")]
    assert calls(events)[0].arguments == '{"city":"Tok'


def test_truncated_right_after_the_header():
    text = "<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>"
    assert summary(parse(harmony, text)) == [("incomplete", "get_weather", "truncated")]


@pytest.mark.parametrize(
    "body",
    ['{"city": "Tokyo",}', "city=Tokyo", '{"city": "Tokyo"}}'],
)
def test_invalid_arguments(body):
    text = f"<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>{body}<|call|>" + FINAL
    events = parse(harmony, text)
    assert summary(events) == [("incomplete", "get_weather", "invalid_arguments"), ("text", "Sunny, 24°C.")]
    assert calls(events)[0].raw.endswith("<|call|>")


def test_call_interrupted_by_next_header():
    text = '<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>{"city":' + FINAL
    assert summary(parse(harmony, text)) == [
        ("incomplete", "get_weather", "invalid_arguments"),
        ("text", "Sunny, 24°C."),
    ]


def test_unknown_recipients_are_undeclared_calls():
    text = (
        '<|channel|>analysis to=browser.search code<|message|>{"query":"tokyo weather"}<|call|>'
        "<|start|>assistant<|channel|>analysis to=python code<|message|>print(1)<|call|>"
        '<|start|>assistant<|channel|>commentary to=functions.rm_rf json<|message|>{"path":"/"}<|call|>'
    )
    events = parse(harmony, text)
    assert summary(events) == [
        ("call", "browser.search", {"query": "tokyo weather"}),
        ("incomplete", "python", "invalid_arguments"),
        ("call", "rm_rf", {"path": "/"}),
    ]
    assert [e.declared for e in events if isinstance(e, ToolCallStart)] == [False, False, False]
    assert [e.declared for e in calls(events)] == [False, False, False]


def test_tool_messages_are_text_without_tool_parsing():
    make = splitter_factory("gpt_oss", None, [WEATHER])
    assert summary(parse(make, ANALYSIS + LITERAL + FINAL)) == [
        ("reasoning", "The user wants the weather."),
        ("text", LITERAL),
        ("text", "Sunny, 24°C."),
    ]


def test_tool_parser_name_alone_selects_harmony():
    make = splitter_factory(None, "harmony", [WEATHER])
    assert summary(parse(make, ANALYSIS + LITERAL)) == [
        ("reasoning", "The user wants the weather."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_hallucinated_tool_result_is_not_a_call():
    text = '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{"temp": 24}<|end|>'
    assert summary(parse(harmony, text)) == [("text", '{"temp": 24}')]


def test_stray_tokens_are_markers():
    text = "<|end|>" + FINAL + "<|call|>"
    events = parse(harmony, text)
    assert summary(events) == [("text", "Sunny, 24°C.")]
    assert events[0] == Marker("<|end|><|start|>assistant<|channel|>final<|message|>")
    assert events[-1] == Marker("<|return|><|call|>")


def test_tokens_inside_a_json_string_are_the_strings_text():
    value = "run <|call|> then <|start|>assistant<|channel|>final<|message|>x<|end|>"
    body = json.dumps({"city": value})
    text = f"<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>{body}<|call|>" + FINAL
    assert summary(parse(harmony, text)) == [("call", "get_weather", {"city": value}), ("text", "Sunny, 24°C.")]
    # An unterminated string runs to the end of output: never a call.
    cut = '<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>{"city": "Tok<|call|>' + FINAL
    assert summary(parse(harmony, cut)) == [("incomplete", "get_weather", "truncated")]
