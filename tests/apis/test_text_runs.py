"""Answer text is the same on every API, streamed or whole: the runs of text the
parsers report, and nothing else but the whitespace between them.

Whitespace a parser reports as a block edge (`Marker`) is the block's syntax where a
block (reasoning, a delivered call) stands between two runs of text: Anthropic and
Responses give each run its own block, and Chat, whose content is one string, keeps
that whitespace between the runs (as vLLM and SGLang do), so their words never run
together. Where no block does (a call that never completed is its text), that
whitespace is the model's text on every API: the turn is all text, which the template
replays verbatim, so anything else would stop the next prompt being a
prefix-extension of this one.
"""

from __future__ import annotations

from typing import Any

import pytest

from tokenyard.apis.anthropic.stream import MessageStream
from tokenyard.apis.openai_chat.stream import ChatCompletionStream
from tokenyard.apis.openai_responses.stream import ResponseStream
from tokenyard.apis.spoke import Frame
from tokenyard.events import (
    Event,
    Finish,
    Marker,
    PromptProcessed,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallIncomplete,
    ToolCallStart,
)
from tokenyard.parsing.splitter import OutputSplitter
from tokenyard.parsing.tools.base import CallIds


def _texts(events: list[Event]) -> dict[str, tuple[list[str], str]]:
    """Per API: the text of each text block (message item) of the whole response, and
    the text a stream client joins from its deltas."""
    chat = ChatCompletionStream("id", "m", 1)
    anthropic = MessageStream("msg", "m")
    responses = ResponseStream("resp", {}, created_at=1)
    frames: dict[str, list[Frame]] = {"chat": [], "anthropic": [], "responses": []}
    for event in events:
        frames["chat"] += chat.feed(event)
        frames["anthropic"] += anthropic.feed(event)
        frames["responses"] += responses.feed(event)
    content = chat.completion()["choices"][0]["message"]["content"]
    data: list[Any] = [d for _, d in frames["chat"]]
    chat_streamed = "".join(c["delta"].get("content") or "" for d in data for c in d["choices"])
    data = [d for _, d in frames["anthropic"]]
    anthropic_streamed = "".join(d["delta"]["text"] for d in data if d.get("delta", {}).get("type") == "text_delta")
    data = [d for _, d in frames["responses"]]
    responses_streamed = "".join(d["delta"] for d in data if d["type"] == "response.output_text.delta")
    blocks = [b["text"] for b in anthropic.message()["content"] if b["type"] == "text"]
    items = [c["text"] for i in responses.result()["output"] if i["type"] == "message" for c in i["content"]]
    return {
        "chat": ([content] if content else [], chat_streamed),
        "anthropic": (blocks, anthropic_streamed),
        "responses": (items, responses_streamed),
    }


def _agree(events: list[Event]) -> list[str]:
    """The text runs every API agrees on (Chat's content: the runs, whitespace between)."""
    texts = _texts(events)
    runs, streamed = texts["anthropic"]
    assert texts["responses"] == (runs, streamed)
    assert streamed == "".join(runs)
    content, chat_streamed = texts["chat"]
    assert content == ([chat_streamed] if chat_streamed else [])
    assert chat_streamed.split() == " ".join(runs).split()  # every run, none glued to the next
    if len(runs) == 1:
        assert content == runs
    return runs


def test_block_edge_whitespace_is_content_only_where_no_block_stands_between_the_runs():
    raw = '<tool_call>\n{"name": "Bash", x}\n</tool_call>'
    events = [
        PromptProcessed(10, 0),
        TextDelta("Checking."),
        Marker(" "),
        ToolCallStart(0, "c0", "Bash"),
        ToolCallDelta(0, '{"command": '),
        ToolCallIncomplete(0, "c0", "Bash", '{"command": ', raw, "invalid_arguments"),
        Marker("\n"),
        TextDelta("Then more."),
        Marker("\n\n"),
        Marker("<think>"),
        ReasoningDelta("hm"),
        Marker("</think>"),
        Marker("\n\n"),
        TextDelta("Done."),
        Marker("\n"),
        Finish("stop"),
    ]
    assert _agree(events) == [f"Checking. {raw}\nThen more.", "Done."]


# Real families' wire text, through the real parsers, fed in chunks of every size
# that splits its markers differently: (reasoning parser, tool parser, output, runs).
_BAD_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": Paris}}\n</tool_call>'
_CASES = {
    "a call that never completed is text, its edges too": (
        None,
        "hermes",
        f"Checking. {_BAD_CALL}\nThen more.",
        [f"Checking. {_BAD_CALL}\nThen more."],
    ),
    "a cut call at the end is text, its edge too": (
        None,
        "hermes",
        'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa',
        ['Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa'],
    ),
    "a delivered call's edges are its syntax": (
        None,
        "hermes",
        'Let me look. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\nMeanwhile.',
        ["Let me look.", "Meanwhile."],
    ),
    "a reasoning block's edges are its syntax": (
        "qwen3",
        "hermes",
        "<think>\nr1\n</think>\n\nA first.\n\n<think>\nr2\n</think>\n\nB second.",
        ["A first.", "B second."],
    ),
    "a call section's edges are its syntax": (
        None,
        "kimi_k2",
        "Text A.\n<|tool_calls_section_begin|><|tool_call_begin|>functions.Bash:0<|tool_call_argument_begin|>"
        '{"command": "ls"}<|tool_call_end|><|tool_calls_section_end|>\nText B.',
        ["Text A.", "Text B."],
    ),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_real_wire_text_gives_every_api_the_same_text(case: str):
    reasoning_parser, tool_parser, output, runs = _CASES[case]
    for chunk in (1, 2, 3, 7, len(output)):
        splitter = OutputSplitter(reasoning_parser, tool_parser, call_ids=CallIds(nonce="t"))
        events: list[Event] = [PromptProcessed(5, 0)]
        for i in range(0, len(output), chunk):
            events += splitter.feed(output[i : i + chunk])
        events += [*splitter.finish(), Finish("stop")]
        assert _agree(events) == runs, chunk
