"""The Anthropic Messages API, with the official `anthropic` SDK as the client,
against a real server on loopback whose scripted model answers in several real
families' wire formats."""

from __future__ import annotations

import json
import logging

import anthropic
import httpx
import pytest

from tokenyard.engines.scripted import SCRIPTED_COMMAND
from tokenyard.faults import ENGINE_FAILED_MESSAGE
from tokenyard.server.app import ServerConfig

from .serving import WrappedEngine, prompt_log, running_server

HEADER = "x-anthropic-billing-header: cc_version=2.1.330.a3f; cc_entrypoint=sdk-cli;"
BASH = {
    "name": "Bash",
    "description": "Run a shell command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    "cache_control": {"type": "ephemeral"},
}
READ = {
    "name": "Read",
    "description": "Read a file",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}
SYSTEM = [
    {"type": "text", "text": HEADER},
    {"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}},
]

FAMILIES = [
    # (fixture, reasoning parser override, tool parser override)
    ("qwen3", None, None),
    ("qwen3-coder", "qwen3", None),
    ("kimi-k2", "kimi_k25", "kimi_k2"),
    ("deepseek-v3.1", None, None),
    ("gpt-oss", None, None),
]


def client(url: str, **kwargs) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key="x", max_retries=0, **kwargs)


def ask(c: anthropic.Anthropic, messages, *, tools=(BASH,), thinking=None, **kwargs):
    if thinking is None:
        thinking = {"type": "adaptive"}
    params = {"model": "test/model", "max_tokens": 1024, "system": SYSTEM, "messages": messages}
    params.update(kwargs)
    if tools:
        params["tools"] = list(tools)
    if thinking:
        params["thinking"] = thinking
    with c.messages.stream(**params) as stream:
        events = list(stream)
        final = stream.get_final_message()
    return final, events


@pytest.mark.parametrize("family,reasoning,tools", FAMILIES)
def test_tool_loop_with_thinking(family, reasoning, tools, tmp_path):
    with running_server(family, reasoning=reasoning, tools=tools, tmp_path=tmp_path) as (url, state):
        c = client(url)
        first, _ = ask(c, [{"role": "user", "content": "List the files."}])
        kinds = [b.type for b in first.content]
        assert kinds == ["thinking", "tool_use"], first.content
        thinking, call = first.content
        assert thinking.thinking and thinking.signature.startswith("tky1.")
        assert call.name == "Bash" and call.input == {"command": SCRIPTED_COMMAND}
        assert first.stop_reason == "tool_use"
        assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0

        history = [
            {"role": "user", "content": "List the files."},
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "tokenyard-scripted-42"}],
            },
        ]
        second, _ = ask(c, history)
        assert [b.type for b in second.content] == ["thinking", "text"]
        assert "tokenyard-scripted-42" in second.content[1].text
        assert second.stop_reason == "end_turn"

        sent = prompt_log(state)
        assert len(sent) == 2
        for record in sent:
            assert "x-anthropic-billing-header" not in record["prompt_text"] and record["preamble_stripped"]
        # The first turn's reasoning and call re-enter the second prompt.
        assert "tokenyard-scripted-42" in sent[1]["prompt_text"]
        if family != "deepseek-v3.1":  # its template drops history reasoning by design
            assert thinking.thinking in sent[1]["prompt_text"]


def test_omitted_thinking_is_restored_from_the_signature(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        c = client(url)
        first, _ = ask(c, [{"role": "user", "content": "go"}], thinking={"type": "adaptive", "display": "omitted"})
        thinking, call = first.content
        assert thinking.thinking == "" and thinking.signature  # nothing readable leaves the server
        history = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]},
        ]
        ask(c, history, thinking={"type": "adaptive", "display": "omitted"})
        assert "I should call Bash first" in prompt_log(state)[1]["prompt_text"]


def test_foreign_signatures_and_redacted_thinking_are_accepted(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        history = [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "redacted_thinking",
                        "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
                    },
                    {"type": "thinking", "thinking": "Real Claude thought this.", "signature": "ErUBCkYIBRgCIkCx…"},
                    {"type": "tool_use", "id": "toolu_01A", "name": "Bash", "input": {"command": "ls"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01A",
                        "content": [{"type": "text", "text": "a.txt"}],
                        "is_error": False,
                    }
                ],
            },
        ]
        final, _ = ask(client(url), history)
        assert final.content[-1].type == "text"
        prompt = prompt_log(state)[0]["prompt_text"]
        assert "Real Claude thought this." in prompt and "EmwKAhgB" not in prompt


COMPACT_CALLS = [
    [{"raw": '<tool_call>\n{"name": "Bash", "arguments": {"command":"ls  -la"}}\n</tool_call>'}],
    [{"raw": '<tool_call>\n{"name": "Bash", "arguments": {"command":"pwd  -P"}}\n</tool_call>'}],
    [{"text": "done"}],
]


def compact_call_loop(url: str, rewrite=lambda call_id: call_id) -> None:
    """Three turns of a model that writes compact JSON; the client echoes each call
    as an object (under the id `rewrite` makes of it)."""
    c = client(url)
    history = [{"role": "user", "content": "go"}]
    for _ in range(2):
        answer, _ = ask(c, history, thinking={"type": "disabled"})
        call = answer.content[0].model_dump(exclude_none=True)
        history += [
            {"role": "assistant", "content": [{**call, "id": rewrite(call["id"])}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": rewrite(call["id"]), "content": "x"}]},
        ]
    ask(c, history, thinking={"type": "disabled"})


def test_model_arguments_replay_byte_for_byte(tmp_path):
    with running_server("qwen3", script=COMPACT_CALLS, tmp_path=tmp_path) as (url, state):
        compact_call_loop(url)
        prompts = [r["prompt_text"] for r in prompt_log(state)]
    # The client sent back objects. The first call's id was issued before the server
    # had seen this model write JSON: it predicted the templates' style, and every
    # replica renders that call so. From then on ids carry the model's own (compact)
    # style, and its calls replay byte for byte, on any replica.
    assert '{"command": "ls  -la"}' in prompts[1]
    assert '{"command": "ls  -la"}' in prompts[2] and '{"command":"pwd  -P"}' in prompts[2]


def test_interleaved_thinking_and_calls_keep_their_order(tmp_path):
    script = [
        [
            {"reasoning": "First look at the tree."},
            {"call": {"name": "Bash", "arguments": {"command": "ls"}}},
            {"reasoning": "Then read the readme."},
            {"call": {"name": "Read", "arguments": {"path": "README.md"}}},
            {"text": "Both requested."},
        ]
    ]
    with running_server("qwen3.5", script=script, tmp_path=tmp_path) as (url, _):
        final, events = ask(client(url), [{"role": "user", "content": "go"}], tools=(BASH, READ))
        assert [(b.type, getattr(b, "name", None)) for b in final.content] == [
            ("thinking", None),
            ("tool_use", "Bash"),
            ("thinking", None),
            ("tool_use", "Read"),
            ("text", None),
        ]
        assert final.content[3].input == {"path": "README.md"}
        assert final.stop_reason == "tool_use"
        # input_json_delta fragments streamed for each call.
        assert sum(1 for e in events if e.type == "input_json") >= 2


def test_several_calls_in_one_turn(tmp_path):
    script = [
        [
            {"call": {"name": "Bash", "arguments": {"command": "ls"}}},
            {"call": {"name": "Bash", "arguments": {"command": "pwd"}}},
        ]
    ]
    with running_server("kimi-k2", reasoning="kimi_k25", tools="kimi_k2", script=script, tmp_path=tmp_path) as (url, _):
        final, _ = ask(client(url), [{"role": "user", "content": "go"}], thinking={"type": "disabled"})
        calls = [b for b in final.content if b.type == "tool_use"]
        assert [c.input["command"] for c in calls] == ["ls", "pwd"]
        assert [c.id for c in calls] == ["functions.Bash:0", "functions.Bash:1"]  # the model's own ids


def test_max_tokens_cut(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, _):
        final, _ = ask(client(url), [{"role": "user", "content": "go"}], max_tokens=20)
        assert final.stop_reason == "max_tokens"
        assert final.usage.output_tokens == 20
        assert all(b.type != "tool_use" or b.input is not None for b in final.content)


def test_stop_sequences(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, _):
        final, _ = ask(
            client(url),
            [{"role": "user", "content": "repeat after me: alpha beta gamma"}],
            tools=(),
            thinking={"type": "disabled"},
            stop_sequences=["beta"],
        )
        assert final.stop_reason == "stop_sequence" and final.stop_sequence == "beta"
        assert final.content[0].text.endswith("alpha")  # trailing whitespace is not content


def test_non_streaming_and_count_tokens_agree(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        c = client(url)
        messages = [
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}
        ]
        message = c.messages.create(
            model="test/model",
            max_tokens=300,
            system=SYSTEM,
            messages=messages,
            tools=[BASH],
            thinking={"type": "adaptive"},
        )
        assert [b.type for b in message.content] == ["thinking", "tool_use"]
        counted = c.messages.count_tokens(
            model="test/model", system=SYSTEM, messages=messages, tools=[BASH], thinking={"type": "adaptive"}
        )
        assert counted.input_tokens == message.usage.input_tokens + message.usage.cache_read_input_tokens
        assert counted.input_tokens == prompt_log(state)[0]["prompt_tokens"]


def test_tool_search_references_render_where_they_appear_and_count_the_same(tmp_path):
    deferred = {**READ, "name": "mcp__fs__read_file", "defer_loading": True}
    search = {
        "name": "ToolSearch",
        "description": "Find deferred tools",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    }
    messages = [
        {"role": "user", "content": "Read the README."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {"query": "read"}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "tool_reference", "tool_name": "mcp__fs__read_file"}],
                }
            ],
        },
    ]
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        c = client(url)
        params = {"model": "test/model", "system": SYSTEM, "messages": messages, "thinking": {"type": "disabled"}}
        deferred_count = c.messages.count_tokens(tools=[BASH, search, deferred], **params).input_tokens
        eager_count = c.messages.count_tokens(tools=[BASH, search, READ], **params).input_tokens
        reply = c.messages.create(max_tokens=50, tools=[BASH, search, deferred], **params)
        [record] = prompt_log(state)
    assert reply.usage.input_tokens + reply.usage.cache_read_input_tokens == deferred_count
    assert deferred_count != eager_count
    text = record["prompt_text"]
    # Declared tools first, then the conversation; the deferred one is defined only in the tool result.
    assert text.index('"name": "mcp__fs__read_file"') > text.index("Read the README.")
    assert '<function>{"description": "Read a file", "name": "mcp__fs__read_file"' in text
    assert reply.content[0].type == "text"


def test_requests_as_claude_code_sends_them(tmp_path):
    body = {
        "model": "test/model",
        "max_tokens": 32000,
        "stream": True,
        "system": SYSTEM,
        "tools": [BASH],
        "messages": [
            {"role": "system", "content": "Extra system guidance."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>context</system-reminder>"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                    {"type": "text", "text": "what is this?", "cache_control": {"type": "ephemeral"}},
                ],
            },
        ],
        "metadata": {"user_id": json.dumps({"device_id": "d", "session_id": "5f1c0a52-1111-4c1b-9b1e-0123456789ab"})},
        "thinking": {"type": "adaptive", "display": "omitted"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "high"},
        "tool_choice": {"type": "auto"},
        "some_future_field": {"x": 1},
    }
    headers = {
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
        "x-claude-code-session-id": "5f1c0a52-1111-4c1b-9b1e-0123456789ab",
    }
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        with httpx.stream("POST", f"{url}/v1/messages?beta=true", json=body, headers=headers, timeout=30) as response:
            assert response.status_code == 200
            names = [line[7:] for line in response.iter_lines() if line.startswith("event: ")]
        assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
        record = prompt_log(state)[0]
        assert record["session"] == "5f1c0a52-1111-4c1b-9b1e-0123456789ab"
        assert "Extra system guidance." in record["prompt_text"] and "[image]" in record["prompt_text"]


def _post(url, body, headers=None, path="/v1/messages"):
    return httpx.post(
        f"{url}{path}",
        content=body if isinstance(body, (bytes, str)) else json.dumps(body),
        headers={"content-type": "application/json", **(headers or {})},
        timeout=30,
    )


def test_errors_in_the_anthropic_envelope(tmp_path):
    config = ServerConfig(api_key="secret", max_body_bytes=50_000)
    good = {"model": "test/model", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    auth = {"x-api-key": "secret"}
    with running_server("qwen3", config=config, max_model_len=400, tmp_path=tmp_path) as (url, _):
        cases = [
            (_post(url, good), 401, "authentication_error"),
            (_post(url, good, {"authorization": "Bearer wrong"}), 401, "authentication_error"),
            (_post(url, b"{not json", auth), 400, "invalid_request_error"),
            (_post(url, {**good, "max_tokens": None}, auth), 400, "invalid_request_error"),
            (_post(url, {**good, "messages": [{"role": "robot", "content": "x"}]}, auth), 400, "invalid_request_error"),
            (_post(url, {**good, "model": "nope/model"}, auth), 404, "not_found_error"),
            (
                _post(url, {**good, "messages": [{"role": "user", "content": "x" * 60_000}]}, auth),
                413,
                "request_too_large",
            ),
            (
                _post(url, {**good, "messages": [{"role": "user", "content": "word " * 2000}]}, auth),
                400,
                "invalid_request_error",
            ),
        ]
        for response, status, kind in cases:
            assert response.status_code == status, response.text
            assert response.json() == {
                "type": "error",
                "error": {"type": kind, "message": response.json()["error"]["message"]},
            }
        ok = _post(url, good, {"authorization": "Bearer secret"})
        assert ok.status_code == 200 and ok.json()["type"] == "message"
        with pytest.raises(anthropic.NotFoundError):
            client(url, default_headers=auth).messages.create(
                model="other", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )


def test_mid_stream_failure_is_an_error_event(tmp_path):
    from tokenyard.faults import EngineError

    class Failing(WrappedEngine):
        async def generate(self, request):
            n = 0
            async for chunk in self.inner.generate(request):
                yield chunk
                n += 1
                if n == 5:
                    raise EngineError("the engine crashed")

    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        state.pipeline.engine = Failing(state.pipeline.engine)
        body = {
            "model": "test/model",
            "max_tokens": 100,
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        }
        with httpx.stream("POST", f"{url}/v1/messages", json=body, timeout=30) as response:
            lines = list(response.iter_lines())
        names = [line[7:] for line in lines if line.startswith("event: ")]
        assert names[0] == "message_start" and names[-1] == "error"
        assert (
            json.loads(lines[-2][6:] if lines[-1] == "" else lines[-1][6:])["error"]["message"] == ENGINE_FAILED_MESSAGE
        )
        with pytest.raises(anthropic.APIError):
            ask(client(url), [{"role": "user", "content": "hi"}])


def test_streaming_tool_dispatch_arrives_before_the_turn_ends(tmp_path):
    script = [[{"call": {"name": "Bash", "arguments": {"command": "ls"}}}, {"text": "and meanwhile more text follows"}]]
    config = ServerConfig(enable_streaming_tool_dispatch=True)
    with running_server("qwen3", script=script, config=config, tmp_path=tmp_path) as (url, _):
        body = {
            "model": "test/model",
            "max_tokens": 200,
            "stream": True,
            "tools": [BASH],
            "messages": [{"role": "user", "content": "go"}],
        }
        with httpx.stream("POST", f"{url}/v1/messages", json=body, timeout=30) as response:
            lines = [line for line in response.iter_lines() if line.startswith("data: ")]
        events = [json.loads(line[6:]) for line in lines]
        types = [e["type"] for e in events]
        dispatch = types.index("tool_call_dispatch")
        assert (
            events[dispatch]["tool_call"]["input"] == {"command": "ls"}
            and events[dispatch]["tool_call"]["name"] == "Bash"
        )
        assert dispatch < types.index("message_delta")
        text_deltas = [
            i for i, e in enumerate(events) if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta"
        ]
        assert text_deltas and dispatch < text_deltas[0]  # the turn went on after the dispatch
        # And the official SDK tolerates the extra event.
        final, _ = ask(client(url), [{"role": "user", "content": "go"}], thinking={"type": "disabled"})
        assert [b.type for b in final.content] == ["tool_use", "text"]


def test_ping_keepalives_during_a_slow_turn(tmp_path):
    config = ServerConfig(keepalive_seconds=0.05)
    with running_server("qwen3", token_delay=0.12, config=config, tmp_path=tmp_path) as (url, _):
        body = {"model": "test/model", "max_tokens": 6, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        with httpx.stream("POST", f"{url}/v1/messages", json=body, timeout=30) as response:
            names = [line[7:] for line in response.iter_lines() if line.startswith("event: ")]
        assert "ping" in names and names.index("ping") > names.index("message_start")
        final, _ = ask(
            client(url), [{"role": "user", "content": "hi"}], tools=(), thinking={"type": "disabled"}, max_tokens=2
        )
        assert final.stop_reason == "max_tokens"


def test_models_in_both_shapes(tmp_path):
    names = ("Qwen/Qwen3-8B", "claude-sonnet-4-6")
    with running_server("qwen3", names=names, max_model_len=40_960, tmp_path=tmp_path) as (url, _):
        listed = client(url).models.list()
        assert [m.id for m in listed.data] == ["Qwen/Qwen3-8B", "claude-sonnet-4-6"]
        assert client(url).models.retrieve("Qwen/Qwen3-8B").id == "Qwen/Qwen3-8B"
        openai_shape = httpx.get(f"{url}/v1/models").json()
        assert openai_shape["object"] == "list" and openai_shape["data"][0]["object"] == "model"
        assert httpx.get(f"{url}/v1/models/Qwen/Qwen3-8B").json()["id"] == "Qwen/Qwen3-8B"
        # The SDK's ModelInfo validates: lifecycle, the real window and output cap, capabilities.
        info = client(url).models.retrieve("claude-sonnet-4-6")
        assert info.lifecycle == "active"
        assert info.max_input_tokens == 40_960 and info.max_tokens == 40_960
        assert info.capabilities is not None
        assert info.capabilities.thinking.supported and info.capabilities.thinking.types.disabled.supported
        assert not info.capabilities.effort.supported  # qwen3's template reads no reasoning_effort
        assert info.capabilities.structured_outputs.supported  # output_config.format is held to
        assert listed.data[0].max_input_tokens == 40_960
        assert openai_shape["data"][0]["max_model_len"] == 40_960
        missing = httpx.get(f"{url}/v1/models/nope", headers={"anthropic-version": "2023-06-01"})
        assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"
        # An alias serves the same model.
        reply = client(url).messages.create(
            model="claude-sonnet-4-6", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
        )
        assert reply.model == "claude-sonnet-4-6" and reply.content


def test_model_effort_levels_follow_the_template(tmp_path):
    with running_server("gpt-oss", tmp_path=tmp_path) as (url, _):
        effort = client(url).models.retrieve("test/model").capabilities.effort
    assert effort.supported and effort.low.supported and effort.high.supported
    assert not effort.max.supported


def test_client_disconnect_aborts_the_engine_request(tmp_path):
    import time

    class Recording(WrappedEngine):
        """Records whether a request's stream was closed early."""

        def __init__(self, inner):
            super().__init__(inner)
            self.closed, self.produced = [], 0

        async def generate(self, request):
            finished = False
            try:
                async for chunk in self.inner.generate(request):
                    self.produced += len(chunk.token_ids)
                    yield chunk
                finished = True
            finally:
                self.closed.append(not finished)

    with running_server("qwen3", token_delay=0.05, tmp_path=tmp_path) as (url, state):
        engine = Recording(state.pipeline.engine)
        state.pipeline.engine = engine
        body = {
            "model": "test/model",
            "max_tokens": 500,
            "stream": True,
            "tools": [BASH],
            "messages": [{"role": "user", "content": "go"}],
        }
        with httpx.stream("POST", f"{url}/v1/messages", json=body, timeout=30) as response:
            for line in response.iter_lines():
                if "content_block_delta" in line:
                    break  # the client goes away mid-turn
        deadline = time.time() + 5
        while not engine.closed and time.time() < deadline:
            time.sleep(0.02)
        assert engine.closed == [True], "the engine's stream must be closed (aborted) when the client disconnects"
        produced = engine.produced
        time.sleep(0.3)
        assert engine.produced == produced  # nothing more is generated for nobody
        # The server is free for the next request.
        assert (
            client(url)
            .messages.create(model="test/model", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
            .content
        )


def test_tool_ids_stay_unique_across_a_session(tmp_path):
    # A model that restarts its own ids at :0 on every turn must not hand a client
    # an id it already used (Claude Code loops on a repeated id).
    script = [
        [
            {
                "raw": '<|tool_calls_section_begin|><|tool_call_begin|>functions.Bash:0<|tool_call_argument_begin|>{"command": "ls"}<|tool_call_end|><|tool_calls_section_end|>'
            }
        ]
    ]
    with running_server("kimi-k2", reasoning="kimi_k25", tools="kimi_k2", script=script, tmp_path=tmp_path) as (url, _):
        c = client(url)
        first, _ = ask(c, [{"role": "user", "content": "go"}], thinking={"type": "disabled"})
        history = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.content[0].id, "content": "x"}]},
        ]
        second, _ = ask(c, history, thinking={"type": "disabled"})
        assert first.content[0].id == "functions.Bash:0"
        assert second.content[0].type == "tool_use" and second.content[0].id != "functions.Bash:0"


def test_rewritten_tool_ids_still_replay_the_exact_arguments(tmp_path):
    # OpenClaw strips non-alphanumerics from echoed ids; the style the id carries
    # survives, so the model's exact argument text still comes back in the prompt.
    with running_server("qwen3", script=COMPACT_CALLS, tmp_path=tmp_path) as (url, state):
        compact_call_loop(url, rewrite=lambda call_id: "".join(ch for ch in call_id if ch.isalnum()))
        prompts = [r["prompt_text"] for r in prompt_log(state)]
    assert '{"command":"pwd  -P"}' in prompts[2]


def test_prompt_text_never_reaches_the_log_by_default(tmp_path, caplog):
    """A divergence, a subagent and a compaction are all diagnosed in the log, with
    positions, counts and causes, and no text of the prompt."""
    marker = "MARKER-7f3a-prompt-text"
    session = {"x-claude-code-session-id": "sess-1"}
    caplog.set_level(logging.DEBUG, logger="tokenyard")
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        c = client(url)

        def send(text, headers=session, extra=()):
            messages = [{"role": "user", "content": f"{text} {marker}"}, *extra]
            c.messages.create(
                model="test/model",
                max_tokens=20,
                system=SYSTEM,
                messages=messages,
                tools=[BASH],  # agent turns carry tools; a request without is a side query
                extra_headers=headers,
            )

        send("first question")
        send("edited first question")  # edits the history: a divergence
        send("sub task", headers={**session, "x-claude-code-agent-id": "a1", "x-claude-code-parent-agent-id": "main"})
        compaction = [
            {"role": "assistant", "content": "An answer."},
            {"role": "user", "content": "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools. Summarise."},
        ]
        send("edited first question", extra=compaction)
        records = prompt_log(state)
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("tokenyard")]
    assert any("prompt diverged at token" in line and "changed conversation history" in line for line in lines)
    assert any("new stream, started by agent main" in line for line in lines)
    assert any("compaction request" in line for line in lines)
    assert not [line for line in lines if marker in line or "first question" in line]
    assert [r["stream_kind"] for r in records] == ["turn", "turn", "turn", "compaction"]
    assert records[2]["stream"] == "sess-1/a1/test/model" and records[2]["parent_agent_id"] == "main"
    assert records[3]["prefix_stable"] is True


def test_expected_divergences_have_their_own_cause_stream_and_log_level(tmp_path, caplog):
    """Qwen3's real template drops the earlier turn's reasoning at a new user turn, and
    a side query (no tools) in the same session is no turn of it: neither is a WARNING,
    each is counted under its own cause, and the side query has its own stream."""
    from tokenyard.prompting import prefix_watch as pw
    from tokenyard.server import metrics

    def diverged(cause):
        return (
            metrics.REGISTRY.get_sample_value(
                "tokenyard_prefix_divergences_total", {"api": "anthropic", "model": "test/model", "cause": cause}
            )
            or 0
        )

    session = {"x-claude-code-session-id": "sess-2"}
    caplog.set_level(logging.DEBUG, logger="tokenyard")
    before = {cause: diverged(cause) for cause in (pw.CAUSE_TEMPLATE_DROPPED_REASONING, pw.CAUSE_SIDE_QUERY)}
    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    turn1 = [
        {"role": "user", "content": "list the files"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "I will run ls.", "signature": ""}, call]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}]},
    ]
    turn2 = [*turn1, {"role": "assistant", "content": "There is a.py."}, {"role": "user", "content": "and now?"}]
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        c = client(url)
        for messages, tools in ((turn1, [BASH]), (turn2, [BASH]), (turn2[:1], []), (turn2[-1:], [])):
            c.messages.create(
                model="test/model", max_tokens=20, system=SYSTEM, messages=messages, tools=tools, extra_headers=session
            )
        records = prompt_log(state)
    assert "<think>" in records[0]["prompt_text"] and "I will run ls." not in records[1]["prompt_text"], "the template"
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "tokenyard.pipeline"]
    assert not [line for level, line in lines if level >= logging.WARNING], lines
    assert any(pw.CAUSE_TEMPLATE_DROPPED_REASONING in line for _, line in lines)
    assert any(pw.CAUSE_SIDE_QUERY in line for _, line in lines)
    assert [r["stream_kind"] for r in records] == ["turn", "turn", "side query", "side query"]
    assert records[2]["stream"] == records[3]["stream"] != records[1]["stream"]
    assert diverged(pw.CAUSE_TEMPLATE_DROPPED_REASONING) == before[pw.CAUSE_TEMPLATE_DROPPED_REASONING] + 1
    assert diverged(pw.CAUSE_SIDE_QUERY) == before[pw.CAUSE_SIDE_QUERY] + 1


@pytest.mark.parametrize("breakpoint", [True, False], ids=["cache_control", "no-cache_control"])
def test_prompt_usage_follows_anthropic_s_cache_accounting(breakpoint, tmp_path):
    """The simulated engine caches full KV blocks: the first request stores them, the
    next reads them; message_start and the final usage agree, and the three parts add
    up to the prompt. Anthropic counts a cache write only up to a `cache_control`
    breakpoint: with one the stored tokens are cache_creation_input_tokens; without,
    they are input_tokens (which never drops to 0 because the engine also cached them)."""
    block = {"type": "text", "text": "List the files in the repository, please."}
    system, tool = SYSTEM, BASH
    if breakpoint:
        block["cache_control"] = {"type": "ephemeral"}
    else:
        system = [{k: v for k, v in b.items() if k != "cache_control"} for b in SYSTEM]
        tool = {k: v for k, v in BASH.items() if k != "cache_control"}
    messages = [{"role": "user", "content": [block]}]
    with running_server("qwen3", engine="simulated", tmp_path=tmp_path) as (url, _):
        c = client(url)
        usages = []
        for _ in range(2):
            final, events = ask(c, messages, tools=[tool], system=system, thinking={"type": "disabled"}, max_tokens=30)
            start = next(e for e in events if e.type == "message_start").message.usage
            counted = c.messages.count_tokens(
                model="test/model", system=system, messages=messages, tools=[tool], thinking={"type": "disabled"}
            ).input_tokens
            for usage in (start, final.usage):
                total = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
                assert total == counted
            assert start.cache_creation_input_tokens == final.usage.cache_creation_input_tokens
            usages.append(final.usage)
    first, second = usages
    assert first.cache_read_input_tokens == 0 and second.cache_read_input_tokens > 0
    assert second.cache_creation_input_tokens == 0
    if breakpoint:
        assert first.cache_creation_input_tokens > 0
        assert second.cache_read_input_tokens >= first.cache_creation_input_tokens
    else:
        assert first.cache_creation_input_tokens == 0 and first.input_tokens == counted
        assert second.input_tokens == counted - second.cache_read_input_tokens > 0


def test_context_management_edits_change_what_the_model_sees(tmp_path):
    """Claude Code's `context_management.edits`, as Anthropic applies them before the
    prompt reaches the model (the client keeps sending its full history): thinking
    kept only in the last N assistant turns ("all": every turn), old tool results
    (and inputs, if asked) replaced by a note once the prompt is over the trigger."""
    from tokenyard.prompting.replay import CLEARED_TOOL_RESULT

    def use(n):
        return {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": f"echo call-{n}"}}

    def result(n):
        return {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"out-{n}"}],
        }

    history = [
        {"role": "user", "content": "run two commands"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "first-thought", "signature": ""}, use(1)]},
        result(1),
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "second-thought", "signature": ""}, use(2)]},
        result(2),
    ]
    thinking_turns = {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}}
    tool_uses = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": 10},
        "keep": {"type": "tool_uses", "value": 1},
        "clear_tool_inputs": True,
    }
    cases = [
        None,
        [{"type": "clear_thinking_20251015", "keep": "all"}],
        [thinking_turns],
        [{**tool_uses, "trigger": {"type": "input_tokens", "value": 1_000_000}}],
        [tool_uses],
    ]
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        c = client(url)
        counted = []
        for edits in cases:
            extra = {} if edits is None else {"context_management": {"edits": edits}}
            c.messages.create(
                model="test/model", max_tokens=20, system=SYSTEM, messages=history, tools=[BASH], extra_body=extra
            )
            counted.append(
                c.messages.count_tokens(
                    model="test/model", system=SYSTEM, messages=history, tools=[BASH], extra_body=extra
                )
            )
        prompts = [r["prompt_text"] for r in prompt_log(state)]
    untouched, keep_all, last_turn, not_triggered, cleared = prompts
    assert untouched == keep_all == not_triggered
    assert "first-thought" in untouched and "second-thought" in untouched and "out-1" in untouched
    assert "first-thought" not in last_turn and "second-thought" in last_turn
    assert "out-1" not in cleared and CLEARED_TOOL_RESULT in cleared and "echo call-1" not in cleared
    assert "out-2" in cleared and "echo call-2" in cleared, "the last tool use is kept"
    assert [r.input_tokens for r in counted][4] < counted[0].input_tokens, "count_tokens counts what is rendered"
