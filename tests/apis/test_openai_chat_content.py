"""Chat Completions content from real parser output: one string, so the text runs
around a tool call keep the whitespace between them, and a call that never
completed is content, not a `tool_calls` entry (as vLLM and SGLang return it). What
text the runs around a call give every API: test_text_runs.py."""

from __future__ import annotations

from tokenyard.apis.openai_chat.stream import ChatCompletionStream
from tokenyard.events import Finish, PromptProcessed
from tokenyard.parsing.splitter import OutputSplitter
from tokenyard.parsing.tools.base import CallIds


def _run(tool_parser: str, output: str, chunk: int = 3) -> tuple[dict, str]:
    """The whole message, and the content a stream client joins from its chunks."""
    splitter = OutputSplitter(None, tool_parser, call_ids=CallIds(nonce="t"))
    encoder = ChatCompletionStream("id", "m", 1)
    frames = encoder.feed(PromptProcessed(5, 0))
    for i in range(0, len(output), chunk):
        for event in splitter.feed(output[i : i + chunk]):
            frames += encoder.feed(event)
    for event in splitter.finish():
        frames += encoder.feed(event)
    frames += encoder.feed(Finish("stop"))
    streamed = "".join(choice["delta"].get("content") or "" for _, data in frames for choice in data.get("choices", []))
    return encoder.completion()["choices"][0]["message"], streamed


def _message(tool_parser: str, output: str, chunk: int = 3) -> dict:
    return _run(tool_parser, output, chunk)[0]


def test_text_runs_around_a_call_keep_their_whitespace():
    output = (
        "Let me get the weather info. "
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
        "Meanwhile, I will check the news."
    )
    for chunk in (1, 3, len(output)):
        message, streamed = _run("hermes", output, chunk)
        assert message["content"] == streamed == "Let me get the weather info. \nMeanwhile, I will check the news."
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather"]


def test_a_call_with_invalid_arguments_is_content_not_a_tool_call():
    bad = '<tool_call>\n{"name": "get_weather", "arguments": {"city": Paris}}\n</tool_call>'
    message = _message("hermes", "Checking. " + bad)
    assert "tool_calls" not in message
    assert message["content"] == "Checking. " + bad


def test_a_cut_call_is_content_and_the_complete_one_stays_a_call():
    output = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Ber'
    )
    message = _message("hermes", output)
    assert [c["function"]["arguments"] for c in message["tool_calls"]] == ['{"city": "Oslo"}']
    assert message["content"].endswith('{"city": "Ber')
