"""A call that never completed is never a complete tool_use in the whole message:
no repaired `input` a client could execute."""

from __future__ import annotations

from tokenyard.apis.anthropic.stream import MessageStream
from tokenyard.events import Finish, PromptProcessed
from tokenyard.parsing.splitter import OutputSplitter
from tokenyard.parsing.tools.base import CallIds


def _message(output: str) -> dict:
    splitter = OutputSplitter(None, "kimi_k2", call_ids=CallIds(nonce="t"))
    encoder = MessageStream("msg", "m")
    encoder.feed(PromptProcessed(5, 0))
    for event in [*splitter.feed(output), *splitter.finish()]:
        encoder.feed(event)
    encoder.feed(Finish("stop"))
    return encoder.message()


def test_an_argument_cut_by_its_own_end_marker_is_text_not_a_repaired_input():
    # `<|tool_call_end|>` inside the JSON string stays argument text; the output then
    # ends inside the string, so the call is incomplete.
    output = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.Bash:0<|tool_call_argument_begin|>"
        '{"command": "echo <|tool_call_end|><|tool_calls_section_end|>'
    )
    message = _message(output)
    assert [b["type"] for b in message["content"]] == ["text"]
    assert message["content"][0]["text"].startswith("<|tool_call_begin|>functions.Bash:0")


def test_a_marker_inside_a_complete_string_argument_survives_byte_exact():
    command = "echo '<|tool_call_end|><|tool_calls_section_end|>' done"
    output = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.Bash:0<|tool_call_argument_begin|>"
        '{"command": "' + command + '"}<|tool_call_end|><|tool_calls_section_end|>'
    )
    message = _message(output)
    assert [(b["type"], b.get("input")) for b in message["content"]] == [("tool_use", {"command": command})]
