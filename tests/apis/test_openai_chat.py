"""The Chat Completions spoke's sans-IO halves: request mapping and the chunk
encoder, fed values directly."""

from __future__ import annotations

import pytest

from tokenyard.apis.anthropic.stream import MessageStream
from tokenyard.apis.errors import engine_failed
from tokenyard.apis.openai_chat.requests import parse_request, to_conversation
from tokenyard.apis.openai_chat.stream import ChatCompletionStream
from tokenyard.apis.openai_responses.stream import ResponseStream
from tokenyard.conversation import Image, Reasoning, Text, ToolCall, ToolResult
from tokenyard.events import (
    Finish,
    Marker,
    PromptProcessed,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallIncomplete,
    ToolCallReady,
    ToolCallStart,
    Usage,
)
from tokenyard.faults import ApiError, Fault


def _conversation(messages, **extra):
    return to_conversation(parse_request({"model": "m", "messages": messages, **extra}))


def test_tool_results_and_assistant_turns_map_to_canonical_parts():
    conversation = _conversation(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                ],
            },
            {
                "role": "assistant",
                "reasoning": "thinking aloud",
                "content": [{"type": "text", "text": "Two calls."}],
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": '{"command":"ls"}'}},
                    {"id": "call_2", "type": "function", "function": {"name": "Read", "arguments": '{ "path" : "a" }'}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "a b"},
            {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "contents"}]},
            {"role": "user", "content": "next"},
        ],
        stop="END",
        max_tokens=5,
        max_completion_tokens=9,
    )
    user, assistant, results, follow_up = conversation.messages
    assert user.parts == [
        Text(text="look"),
        Image(media_type="image/png", data="AAAA"),
        Image(url="https://example.com/a.png"),
    ]
    assert assistant.parts == [
        Reasoning(text="thinking aloud"),
        Text(text="Two calls."),
        ToolCall(id="call_1", name="Bash", arguments='{"command":"ls"}'),
        ToolCall(id="call_2", name="Read", arguments='{ "path" : "a" }'),  # byte for byte
    ]
    assert results.role == "user" and results.parts == [
        ToolResult(tool_call_id="call_1", content=[Text(text="a b")], name="Bash"),
        ToolResult(tool_call_id="call_2", content=[Text(text="contents")], name="Read"),
    ]
    assert follow_up.text() == "next"
    assert conversation.sampling.stop == ["END"] and conversation.sampling.max_tokens == 9


def test_controls_map_to_the_conversation():
    conversation = _conversation(
        [{"role": "user", "content": "x"}],
        tools=[{"type": "function", "function": {"name": "Bash"}}],
        tool_choice={"type": "function", "function": {"name": "Bash"}},
        parallel_tool_calls=False,
        reasoning_effort="low",
        chat_template_kwargs={"enable_thinking": False, "x": 1},
        top_k=-1,
        metadata={"session_id": "s1"},
        frequency_penalty=0.5,
        presence_penalty=-0.25,
    )
    assert (conversation.tool_choice.mode, conversation.tool_choice.name) == ("named", "Bash")
    assert conversation.parallel_tool_calls is False
    assert conversation.tools[0].parameters == {"type": "object", "properties": {}}
    assert conversation.thinking.mode == "disabled" and conversation.thinking.effort == "low"
    assert conversation.template_kwargs == {"enable_thinking": False, "x": 1}
    assert conversation.sampling.top_k is None and conversation.session_key == "s1"
    assert (conversation.sampling.frequency_penalty, conversation.sampling.presence_penalty) == (0.5, -0.25)
    assert _conversation([{"role": "user", "content": "x"}], tool_choice="none").tool_choice.mode == "none"


@pytest.mark.parametrize(
    "body,param",
    [
        ({"n": 3}, "n"),
        ({"logprobs": True}, "logprobs"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"response_format": {"type": "xml"}}, "response_format.type"),
        ({"stop": 5}, "stop"),
        ({"frequency_penalty": 2.5}, "frequency_penalty"),
        ({"presence_penalty": -3}, "presence_penalty"),
        ({"tool_choice": {"type": "function"}}, "tool_choice"),
        (
            {"messages": [{"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
            "messages.0.content.0",
        ),
        ({"messages": [{"role": "user", "content": [{"type": "text"}]}]}, "messages.0.content.0"),
    ],
)
def test_bad_requests_name_their_param(body, param):
    with pytest.raises(ApiError) as raised:
        _conversation([{"role": "user", "content": "x"}], **body) if "messages" not in body else to_conversation(
            parse_request({"model": "m", **body})
        )
    assert raised.value.fault is Fault.INVALID_REQUEST and raised.value.param == param


def _feed(encoder, events):
    return [wire for event in events for wire in encoder.feed(event)]


def test_a_truncated_call_is_never_streamed_as_a_call_but_as_content():
    encoder = ChatCompletionStream("id", "m", 1, dispatch=True)
    wire = _feed(
        encoder,
        [
            PromptProcessed(10, 0),
            ReasoningDelta("hm"),
            Marker("</think>"),
            ToolCallStart(0, "call_1", "Bash"),
            ToolCallDelta(0, '{"command": "l'),
            ToolCallIncomplete(0, "call_1", "Bash", '{"command": "l', '<tool_call>{"name"…', "truncated"),
            Finish("length", usage=Usage(10, 0, 8, 1)),
        ],
    )
    names = [name for name, _ in wire]
    assert "tool_call_dispatch" not in names and names.count("reasoning_dispatch") == 1
    deltas = [data["choices"][0]["delta"] for name, data in wire if name is None and data["choices"]]
    assert not [d for d in deltas if "tool_calls" in d]
    assert [d["content"] for d in deltas if d.get("content")] == ['<tool_call>{"name"…']
    assert wire[-1][1]["choices"][0]["finish_reason"] == "length"
    completion = encoder.completion()
    message = completion["choices"][0]["message"]
    # Never delivered as a call: the model's text for it is the message's content.
    assert "tool_calls" not in message
    assert message["content"] == '<tool_call>{"name"…' and message["reasoning_content"] == message["reasoning"] == "hm"
    assert completion["usage"] == {
        "prompt_tokens": 10,
        "completion_tokens": 8,
        "total_tokens": 18,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 1},
    }


def test_dispatch_precedes_the_last_fragment_and_interleaved_reasoning_is_dispatched_per_block():
    encoder = ChatCompletionStream("id", "m", 1, dispatch=True, include_usage=True)
    wire = _feed(
        encoder,
        [
            PromptProcessed(10, 4),
            ReasoningDelta("one"),
            Marker("</think>"),
            ToolCallStart(0, "call_1", "Bash"),
            ToolCallDelta(0, "{}"),
            ToolCallReady(0, "call_1", "Bash", "{}", "raw"),
            ReasoningDelta("two"),
            TextDelta("done"),
            Finish("tool_calls", usage=Usage(10, 4, 5, 2)),
        ],
    )
    kinds = []
    for name, data in wire:
        delta = data["choices"][0]["delta"] if data["choices"] else {}
        kinds.append(name or next(iter(delta), "usage" if data.get("usage") else "finish"))
    assert kinds == [
        "role",
        "reasoning_content",
        "reasoning_dispatch",
        "tool_calls",
        "tool_call_dispatch",
        "tool_calls",
        "reasoning_content",
        "reasoning_dispatch",
        "content",
        "finish",
        "usage",
    ]
    assert [data["reasoning"] for name, data in wire if name == "reasoning_dispatch"] == ["one", "two"]
    # Dynamo's keys for the same event ride along.
    assert [(data["index"], data["reasoning_content"]) for name, data in wire if name == "reasoning_dispatch"] == [
        (0, "one"),
        (0, "two"),
    ]
    assert wire[-1][1]["usage"]["prompt_tokens_details"] == {"cached_tokens": 4}
    assert encoder.completion()["choices"][0]["message"]["content"] == "done"


def test_reasoning_runs_with_only_markers_between_are_one_block_in_every_api():
    # `<think>first</think><think>second</think>answer`: the reasoning is the model's
    # reasoning text, markers out, joined as written (nothing added: what the client
    # echoes or the seal restores is replayed into the next prompt as it was shown).
    events = [
        PromptProcessed(10, 0),
        Marker("<think>"),
        ReasoningDelta("first"),
        Marker("</think>"),
        Marker("<think>"),
        ReasoningDelta("second"),
        Marker("</think>"),
        TextDelta("answer"),
        Finish("stop"),
    ]
    chat = ChatCompletionStream("id", "m", 1, dispatch=True)
    wire = _feed(chat, events)
    assert [data["reasoning"] for name, data in wire if name == "reasoning_dispatch"] == ["firstsecond"]
    assert chat.completion()["choices"][0]["message"]["reasoning_content"] == "firstsecond"
    anthropic = MessageStream("msg", "m")
    _feed(anthropic, events)
    assert [b for b in anthropic.result()["content"] if b["type"] == "thinking"] == [
        {"type": "thinking", "thinking": "firstsecond", "signature": ""}
    ]
    responses = ResponseStream("resp", {}, created_at=1)
    _feed(responses, events)
    items = [item for item in responses.result()["output"] if item["type"] == "reasoning"]
    assert [item["content"] for item in items] == [[{"type": "reasoning_text", "text": "firstsecond"}]]


def test_a_call_is_held_until_complete_and_an_error_inside_it_ends_the_stream_without_it():
    encoder = ChatCompletionStream("id", "m", 1)
    assert _feed(encoder, [ToolCallStart(0, "call_1", "Bash"), ToolCallDelta(0, '{"command": "ls"')]) == []
    [(name, data)] = encoder.error(engine_failed("boom"))
    assert name is None and data == {"error": {"message": "boom", "type": "server_error", "param": None, "code": None}}
    assert encoder.finish() == [(None, "[DONE]")]
