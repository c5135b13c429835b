"""A call that was cut off or whose arguments are not valid JSON is never delivered
as a call, on any API, streamed or not: it is the model's text, and the stop reason
says what was delivered (no `tool_use` / `tool_calls` without a complete call; a
response's status agrees with its items). Real servers on loopback with the
scripted engine writing each family's raw output, read by the official SDKs."""

from __future__ import annotations

from dataclasses import dataclass

import anthropic
import httpx
import openai
import pytest

from tokenyard.server.app import ServerConfig

from .serving import running_server

TOOLS = {"Bash": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}
KIMI_OPEN = "<|tool_calls_section_begin|>"
KIMI_CLOSE = "<|tool_calls_section_end|>"
KIMI_BASH = "<|tool_call_begin|>functions.Bash:{n}<|tool_call_argument_begin|>"
HARMONY_BASH = "<|channel|>commentary to=functions.Bash <|constrain|>json<|message|>"
LONG_COMMAND = "ls -la /tmp/" + "/".join(f"folder{n}" for n in range(40))


@dataclass(frozen=True)
class Case:
    family: str
    raw: str
    broken: str  # text of the broken call that must reach the client as text
    finish: str  # "stop" | "length" | "tool_calls", in Chat Completions' words
    calls: tuple[str, ...] = ()  # the commands of the complete calls delivered
    max_tokens: int = 2048


CASES = {
    # kimi-k2: arguments that are not JSON, closed by the format's own end marker.
    "kimi-k2-invalid-json": Case(
        "kimi-k2",
        KIMI_OPEN + KIMI_BASH.format(n=0) + '{"command": ls -la}<|tool_call_end|>' + KIMI_CLOSE,
        '{"command": ls -la}',
        "stop",
    ),
    # kimi-k2: the end-of-call marker inside a string argument stays argument text;
    # the output then ends inside the string: a cut call.
    "kimi-k2-marker-in-argument": Case(
        "kimi-k2",
        KIMI_OPEN + KIMI_BASH.format(n=0) + '{"command": "echo <|tool_call_end|>' + KIMI_CLOSE,
        '{"command": "echo <|tool_call_end|>',
        "stop",
    ),
    # gpt-oss: invalid JSON, and the end-of-call marker inside an argument.
    "gpt-oss-invalid-json": Case("gpt-oss", HARMONY_BASH + '{"command": ls}<|call|>', '{"command": ls}', "stop"),
    "gpt-oss-marker-in-argument": Case(
        "gpt-oss", HARMONY_BASH + '{"command": "echo <|call|>', '{"command": "echo <|call|>', "stop"
    ),
    # qwen3_coder: a call that ends without its closing tags (its streamed arguments
    # would already look like complete JSON).
    "qwen3-coder-truncated": Case(
        "qwen3-coder",
        "<tool_call>\n<function=Bash>\n<parameter=command>\nls -la",
        "<parameter=command>\nls -la",
        "stop",
    ),
    # qwen3_coder: the output limit cuts the call.
    "qwen3-coder-max-tokens": Case(
        "qwen3-coder",
        f"<tool_call>\n<function=Bash>\n<parameter=command>\n{LONG_COMMAND}\n</parameter>\n</function>\n</tool_call>",
        "<function=Bash>",
        "length",
        max_tokens=24,
    ),
    # The output limit cuts the call right after its only (required) parameter
    # closed: the end of output would complete it, but a call the token limit cut is
    # never dispatched (17 tokens end at `</parameter>\n` in the fixture tokenizer).
    "qwen3-coder-max-tokens-after-parameter": Case(
        "qwen3-coder",
        "<tool_call>\n<function=Bash>\n<parameter=command>\npwd\n</parameter>\n</function>\n</tool_call>",
        "<parameter=command>\npwd",
        "length",
        max_tokens=17,
    ),
    # Text around a call with arguments that are not JSON: the whole turn is text, the
    # whitespace at the call's edges included, byte for byte (replayed verbatim).
    "qwen3-text-around-invalid-json": Case(
        "qwen3",
        'Checking. <tool_call>\n{"name": "Bash", "arguments": {"command": ls}}\n</tool_call>\nThen more.',
        'Checking. <tool_call>\n{"name": "Bash", "arguments": {"command": ls}}\n</tool_call>\nThen more.',
        "stop",
    ),
    # A complete call, then a broken one: only the first is a call.
    "kimi-k2-valid-then-invalid": Case(
        "kimi-k2",
        KIMI_OPEN
        + KIMI_BASH.format(n=0)
        + '{"command": "pwd"}<|tool_call_end|>'
        + KIMI_BASH.format(n=1)
        + '{"command": ls -la}<|tool_call_end|>'
        + KIMI_CLOSE,
        '{"command": ls -la}',
        "tool_calls",
        calls=("pwd",),
    ),
}

ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
RESPONSES_STATUS = {"stop": "completed", "length": "incomplete", "tool_calls": "completed"}


@pytest.fixture(scope="module", params=list(CASES))
def served(request, tmp_path_factory):
    case = CASES[request.param]
    tmp_path = tmp_path_factory.mktemp(request.param)
    config = ServerConfig(keepalive_seconds=0.05)
    with running_server(case.family, script=[[{"raw": case.raw}]], tmp_path=tmp_path, config=config) as (url, _):
        yield url, case


def _anthropic_tools() -> list[dict]:
    return [{"name": name, "description": "run", "input_schema": schema} for name, schema in TOOLS.items()]


def _chat_tools() -> list[dict]:
    return [{"type": "function", "function": {"name": n, "parameters": s}} for n, s in TOOLS.items()]


def _responses_tools() -> list[dict]:
    return [{"type": "function", "name": n, "parameters": s} for n, s in TOOLS.items()]


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_anthropic_never_delivers_a_broken_call(served, streamed):
    url, case = served
    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    body = {
        "model": "test/model",
        "max_tokens": case.max_tokens,
        "messages": [{"role": "user", "content": "list files"}],
        "tools": _anthropic_tools(),
    }
    if streamed:
        with client.messages.stream(**body) as stream:
            events = list(stream)
            message = stream.get_final_message()
        started = [e.content_block.type for e in events if e.type == "content_block_start"]
        assert started.count("tool_use") == len(case.calls)
    else:
        message = client.messages.create(**body)
    uses = [block for block in message.content if block.type == "tool_use"]
    assert [u.input for u in uses] == [{"command": c} for c in case.calls]
    text = "".join(block.text for block in message.content if block.type == "text")
    assert case.broken in text
    assert message.stop_reason == ANTHROPIC_STOP[case.finish]


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_chat_completions_never_delivers_a_broken_call(served, streamed):
    url, case = served
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
    body = {
        "model": "test/model",
        "max_tokens": case.max_tokens,
        "messages": [{"role": "user", "content": "list files"}],
        "tools": _chat_tools(),
    }
    if streamed:
        # The SDK's chunks, put together as a client does (its stream helper refuses
        # a `length` finish outright).
        content, calls, finish = [], {}, None
        for chunk in client.chat.completions.create(**body, stream=True):
            for choice in chunk.choices:
                content.append(choice.delta.content or "")
                for call in choice.delta.tool_calls or []:
                    calls.setdefault(call.index, []).append(call.function.arguments or "")
                finish = choice.finish_reason or finish
        arguments = ["".join(fragments) for _, fragments in sorted(calls.items())]
        text = "".join(content)
    else:
        choice = client.chat.completions.create(**body).choices[0]
        arguments = [c.function.arguments for c in choice.message.tool_calls or []]
        text, finish = choice.message.content or "", choice.finish_reason
    assert arguments == [f'{{"command": "{c}"}}' for c in case.calls]
    assert case.broken in text
    assert finish == case.finish


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_responses_never_delivers_a_broken_call(served, streamed):
    url, case = served
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
    body = {"model": "test/model", "max_output_tokens": case.max_tokens, "input": "list files"}
    if streamed:
        with client.responses.stream(**body, tools=_responses_tools()) as stream:
            events = list(stream)
        assert events[-1].type in ("response.completed", "response.incomplete")
        response = events[-1].response
        added = [e.item.type for e in events if e.type == "response.output_item.added"]
        done = [e.item for e in events if e.type == "response.output_item.done"]
        assert added.count("function_call") == len(case.calls)
        assert [i.id for i in done] == [i.id for i in response.output]  # every item added is done
    else:
        response = client.responses.create(**body, tools=_responses_tools())
    calls = [item for item in response.output if item.type == "function_call"]
    assert [c.arguments for c in calls] == [f'{{"command": "{c}"}}' for c in case.calls]
    text = "".join(part.text for item in response.output if item.type == "message" for part in item.content)
    assert case.broken in text
    assert response.status == RESPONSES_STATUS[case.finish]
    # Items agree with the response: a completed response holds only completed items.
    if response.status == "completed":
        assert {item.status for item in response.output if hasattr(item, "status")} <= {"completed"}


def test_a_long_held_call_keeps_the_stream_alive(tmp_path):
    """While a call is held (its arguments take a while), keep-alives still flow."""
    raw = f"<tool_call>\n<function=Bash>\n<parameter=command>\n{LONG_COMMAND}\n</parameter>\n</function>\n</tool_call>"
    config = ServerConfig(keepalive_seconds=0.05)
    with running_server("qwen3-coder", script=[[{"raw": raw}]], tmp_path=tmp_path, config=config, token_delay=0.01) as (
        url,
        _,
    ):
        body = {
            "model": "test/model",
            "max_tokens": 2048,
            "stream": True,
            "messages": [{"role": "user", "content": "list files"}],
            "tools": _anthropic_tools(),
        }
        names = []
        with httpx.stream("POST", f"{url}/v1/messages", json=body, timeout=60) as response:
            for line in response.iter_lines():
                if line.startswith("event: "):
                    names.append(line[7:])
    call = names.index("content_block_start")
    assert "ping" in names[1:call]  # the call's ~90 tokens at 10 ms each span many keep-alive intervals
    assert names[-2:] == ["message_delta", "message_stop"]
