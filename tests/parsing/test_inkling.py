from tokenyard.events import Marker, ToolCallDelta, ToolCallReady, ToolCallStart

from .support import WEATHER, parse, splitter_factory, summary
from .wire_examples import TOOL_EXAMPLES

LITERAL = TOOL_EXAMPLES["inkling"][1]
M, THINK, TEXT, END = "<|message_model|>", "<|content_thinking|>", "<|content_text|>", "<|end_message|>"
inkling = splitter_factory("inkling", "inkling", [WEATHER])


def test_reference_literal_ready_at_the_end_marker():
    events = parse(inkling, LITERAL)
    assert summary(events) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    ready = next(e for e in events if isinstance(e, ToolCallReady))
    assert ready.arguments == '{"city": "Tokyo", "days": 3}' and ready.raw == LITERAL


def test_blocks_in_order():
    text = f"{THINK}Check Tokyo.{END}{M}{TEXT}On it.{END}{M}{LITERAL}{M}{THINK}Now answer.{END}{M}{TEXT}Sunny.{END}"
    assert summary(parse(inkling, text)) == [
        ("reasoning", "Check Tokyo."),
        ("text", "On it."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
        ("reasoning", "Now answer."),
        ("text", "Sunny."),
    ]


def test_header_is_framing_and_end_sampling_ends_a_block():
    text = f"{TEXT}Let me look.{END}{M}get_weather{LITERAL[: -len(END)]}<|content_model_end_sampling|>"
    assert summary(parse(inkling, text)) == [
        ("text", "Let me look."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_tool_block_ends_unclosed_thinking():
    assert summary(parse(inkling, f"{THINK}Look it up.{LITERAL}")) == [
        ("reasoning", "Look it up."),
        ("call", "get_weather", {"city": "Tokyo", "days": 3}),
    ]


def test_raw_tool_text_and_errors_are_visible_text():
    text = f"<|content_invoke_tool_text|>get_weather Tokyo{END}{M}<|content_tool_error|>oops{END}"
    assert summary(parse(inkling, text)) == [("text", "get_weather Tokyo"), ("text", "oops")]


def test_streams_arguments_and_recovers_a_complete_call_at_the_end():
    splitter = inkling()
    events = splitter.feed('<|content_invoke_tool_json|>{"name": "get_weather", "args": {"city": "Tok')
    assert any(isinstance(e, ToolCallStart) for e in events)
    assert "".join(e.arguments for e in events if isinstance(e, ToolCallDelta)) == '{"city": "Tok'
    # Complete JSON whose end marker never came: the call stands.
    assert summary(parse(inkling, LITERAL[: -len(END)])) == [("call", "get_weather", {"city": "Tokyo", "days": 3})]
    # Incomplete JSON: never dispatched.
    assert summary(parse(inkling, LITERAL[:60])) == [("incomplete", "get_weather", "truncated")]


def test_marker_spellings_inside_arguments_stay_arguments():
    text = '<|content_invoke_tool_json|>{"name": "get_weather", "args": {"city": "<|end_message|> <|content_thinking|>"}}<|end_message|>'
    assert summary(parse(inkling, text)) == [("call", "get_weather", {"city": "<|end_message|> <|content_thinking|>"})]


def test_a_tool_block_that_is_no_call_keeps_its_kind_token_as_syntax():
    # SGLang's inkling tests: the payload is content, the special token is not.
    text = "Visible.<|message_model|>weather<|content_invoke_tool_json|>{not json at all<|end_message|>"
    assert summary(parse(inkling, text)) == [("text", "Visible."), ("text", "{not json at all")]


def test_an_empty_tool_block_is_framing_and_its_end_token_never_text():
    # SGLang's test_degenerate_payloads_yield_no_call: no call, no content.
    for text in (f"<|content_invoke_tool_json|>{END}", f"<|content_invoke_tool_json|> \n{END}After."):
        events = parse(inkling, text)
        assert summary(events) == ([] if text.endswith(END) else [("text", "After.")])
        assert "".join(e.text for e in events if hasattr(e, "text")) == text


def test_other_roles_and_media_tokens_in_the_answer_are_syntax_never_text():
    # TMLv0's control tokens no assistant block uses (SGLang's
    # test_clean_normal_text_strips_the_full_control_alphabet): markers, the text kept.
    text = f"{TEXT}Sunny.{END}<|message_user|>x<|content_audio_input|><|audio_end|> y<|endoftext|>"
    events = parse(inkling, text)
    assert summary(events) == [("text", "Sunny."), ("text", "x"), ("text", "y")]
    markers = "".join(e.text for e in events if isinstance(e, Marker))
    for token in ("<|message_user|>", "<|content_audio_input|>", "<|audio_end|>", "<|endoftext|>"):
        assert token in markers
