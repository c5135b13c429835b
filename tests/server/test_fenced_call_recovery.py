"""Fenced-call recovery through all three APIs, with the official SDKs as clients: a
scripted model that ends its turn with a ```json fenced call (the failure shape of
small Qwen2.5-Coder models under agent prompts) gives a real Anthropic `tool_use`,
Chat Completions `tool_calls` and Responses `function_call` when the profile switch
is on, and plain text when it is off or when the fence is only shown in prose."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from .serving import running_server

COMMAND = "ls -la"
FENCED = 'I will list the files.\n```json\n{"name": "Bash", "arguments": {"command": "ls -la"}}\n```\n'
SHOWN = 'A call looks like this:\n```json\n{"name": "Bash", "arguments": {"command": "ls -la"}}\n```\nSend it yourself.'
FINAL = "There are 3 files."
BASH_SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}


def serve(tmp_path, first_turn: str, *, recover: bool | None = True):
    script = [[{"raw": first_turn}], [{"text": FINAL}]]
    return running_server("qwen3", script=script, tmp_path=tmp_path, recover_fenced_calls=recover)


# ---- Anthropic Messages -------------------------------------------------------------


def anthropic_turn(url: str, messages: list) -> anthropic.types.Message:
    client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
    tools = [{"name": "Bash", "description": "Run a shell command", "input_schema": BASH_SCHEMA}]
    params = {"model": "test/model", "max_tokens": 512, "messages": messages, "tools": tools}
    with client.messages.stream(**params, thinking={"type": "disabled"}) as stream:
        list(stream)
        return stream.get_final_message()


def test_anthropic_tool_use_then_final_answer(tmp_path):
    with serve(tmp_path, FENCED) as (url, _):
        history = [{"role": "user", "content": "How many files are here?"}]
        first = anthropic_turn(url, history)
        assert [b.type for b in first.content] == ["text", "tool_use"]
        call = first.content[1]
        assert call.name == "Bash" and call.input == {"command": COMMAND}
        assert first.stop_reason == "tool_use"
        history += [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "a\nb\nc"}]},
        ]
        second = anthropic_turn(url, history)
        assert [b.type for b in second.content] == ["text"] and second.stop_reason == "end_turn"


@pytest.mark.parametrize(("first_turn", "recover"), [(SHOWN, True), (FENCED, None), (FENCED, False)])
def test_anthropic_shown_call_or_switch_off_stays_text(tmp_path, first_turn, recover):
    with serve(tmp_path, first_turn, recover=recover) as (url, _):
        message = anthropic_turn(url, [{"role": "user", "content": "How do I call Bash?"}])
        assert [b.type for b in message.content] == ["text"] and message.stop_reason == "end_turn"
        assert "```json" in message.content[0].text


# ---- OpenAI Chat Completions ------------------------------------------------------------


def chat_turn(url: str, messages: list, *, stream: bool) -> tuple[str, list[dict], str]:
    """(content, tool calls as {id, name, arguments}, finish_reason), joined from the
    stream as a client does, or read from the whole response."""
    client = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
    tools = [{"type": "function", "function": {"name": "Bash", "description": "Run", "parameters": BASH_SCHEMA}}]
    params = {"model": "test/model", "messages": messages, "tools": tools}
    if not stream:
        choice = client.chat.completions.create(**params).choices[0]
        calls = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in choice.message.tool_calls or []
        ]
        return choice.message.content or "", calls, choice.finish_reason
    content, calls, finish = "", {}, ""
    for chunk in client.chat.completions.create(**params, stream=True):
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        content += choice.delta.content or ""
        for delta in choice.delta.tool_calls or []:
            call = calls.setdefault(delta.index, {"id": delta.id, "name": delta.function.name, "arguments": ""})
            call["arguments"] += delta.function.arguments or ""
        finish = choice.finish_reason or finish
    return content, [calls[i] for i in sorted(calls)], finish


@pytest.mark.parametrize("stream", [True, False])
def test_chat_tool_calls_then_final_answer(tmp_path, stream):
    with serve(tmp_path, FENCED) as (url, _):
        history = [{"role": "user", "content": "How many files are here?"}]
        content, calls, finish = chat_turn(url, history, stream=stream)
        assert finish == "tool_calls" and "```" not in content
        assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [("Bash", {"command": COMMAND})]
        history += [
            {
                "role": "assistant",
                "content": content,
                "tool_calls": [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in calls
                ],
            },
            {"role": "tool", "tool_call_id": calls[0]["id"], "content": "a\nb\nc"},
        ]
        content, calls, finish = chat_turn(url, history, stream=stream)
        assert calls == [] and finish == "stop" and content


@pytest.mark.parametrize("stream", [True, False])
def test_chat_shown_call_stays_text(tmp_path, stream):
    with serve(tmp_path, SHOWN) as (url, _):
        content, calls, finish = chat_turn(url, [{"role": "user", "content": "How?"}], stream=stream)
        assert calls == [] and finish == "stop" and "```json" in content


# ---- OpenAI Responses ---------------------------------------------------------------------


def responses_turn(url: str, items: list) -> openai.types.responses.Response:
    client = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
    tools = [{"type": "function", "name": "Bash", "description": "Run", "parameters": BASH_SCHEMA, "strict": False}]
    with client.responses.stream(model="test/model", input=items, tools=tools) as stream:
        list(stream)
        return stream.get_final_response()


def user(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def test_responses_function_call_then_final_answer(tmp_path):
    with serve(tmp_path, FENCED) as (url, _):
        items = [user("How many files are here?")]
        first = responses_turn(url, items)
        calls = [item for item in first.output if item.type == "function_call"]
        assert [(c.name, json.loads(c.arguments)) for c in calls] == [("Bash", {"command": COMMAND})]
        assert "```" not in first.output_text
        items += [item.model_dump(exclude_none=True) for item in first.output]
        items.append({"type": "function_call_output", "call_id": calls[0].call_id, "output": "a\nb\nc"})
        second = responses_turn(url, items)
        assert [item.type for item in second.output] == ["message"] and second.output_text


def test_responses_shown_call_stays_text(tmp_path):
    with serve(tmp_path, SHOWN) as (url, _):
        response = responses_turn(url, [user("How?")])
        assert [item.type for item in response.output] == ["message"] and "```json" in response.output_text
