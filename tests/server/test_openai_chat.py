"""The OpenAI Chat Completions API, with the official `openai` SDK as the client,
against a real server on loopback whose scripted model answers in several real
families' wire formats."""

from __future__ import annotations

import json

import anthropic
import httpx
import openai
import pytest

from tokenyard.engines.scripted import SCRIPTED_COMMAND
from tokenyard.faults import ENGINE_FAILED_MESSAGE, EngineError
from tokenyard.server.app import ServerConfig

from .serving import prompt_log, running_server

BASH = {
    "type": "function",
    "function": {
        "name": "Bash",
        "description": "Run a shell command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}
READ = {
    "type": "function",
    "function": {
        "name": "Read",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
}
SYSTEM = {"role": "system", "content": "You are a coding agent."}

FAMILIES = [
    # (fixture, reasoning parser override, tool parser override)
    ("qwen3", None, None),
    ("qwen3-coder", "qwen3", None),
    ("kimi-k2", "kimi_k25", "kimi_k2"),
    ("deepseek-v3.1", None, None),
    ("gpt-oss", None, None),
]


def client(url: str, **kwargs) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, **kwargs)


def collect(stream) -> dict:
    """Join a chat completion stream the way a client does: content, reasoning and
    each call's argument fragments by index; the first chunk of a call must carry
    its index, id, type, name and empty arguments."""
    out = {
        "content": "",
        "reasoning_content": "",
        "reasoning": "",
        "tool_calls": [],
        "finish_reason": None,
        "usage": None,
        "chunks": 0,
        "roles": [],
    }
    for chunk in stream:
        out["chunks"] += 1
        if chunk.usage is not None:
            out["usage"] = chunk.usage
        for choice in chunk.choices:
            delta = choice.delta
            if delta.role:
                out["roles"].append(delta.role)
            out["content"] += delta.content or ""
            extra = delta.model_extra or {}
            out["reasoning_content"] += extra.get("reasoning_content") or ""
            out["reasoning"] += extra.get("reasoning") or ""
            for call in delta.tool_calls or []:
                if call.index == len(out["tool_calls"]):
                    assert call.id and call.type == "function" and call.function.name and call.function.arguments == ""
                    out["tool_calls"].append({"id": call.id, "name": call.function.name, "arguments": ""})
                else:
                    assert call.id is None and call.function.name is None
                out["tool_calls"][call.index]["arguments"] += call.function.arguments or ""
            if choice.finish_reason:
                out["finish_reason"] = choice.finish_reason
    return out


def chat(c: openai.OpenAI, messages, *, tools=(BASH,), **kwargs):
    params = {"model": "test/model", "messages": messages, **kwargs}
    if tools:
        params["tools"] = list(tools)
    return c.chat.completions.create(**params)


@pytest.mark.parametrize("family,reasoning,tools", FAMILIES)
def test_tool_loop_replays_reasoning_and_exact_arguments(family, reasoning, tools, tmp_path):
    with running_server(family, reasoning=reasoning, tools=tools, tmp_path=tmp_path) as (url, state):
        c = client(url)
        question = [SYSTEM, {"role": "user", "content": "List the files."}]
        first = collect(chat(c, question, stream=True))
        assert first["roles"] == ["assistant"]
        assert first["reasoning_content"] == first["reasoning"] and "call Bash" in first["reasoning_content"]
        assert first["content"] == "" and first["finish_reason"] == "tool_calls"
        [call] = first["tool_calls"]
        assert call["name"] == "Bash" and json.loads(call["arguments"]) == {"command": SCRIPTED_COMMAND}
        assert call["id"] == ("functions.Bash:0" if family == "kimi-k2" else call["id"]) and (
            family == "kimi-k2" or call["id"].startswith("call_")
        )

        # The same turn, not streamed: the same message.
        whole = chat(c, question)
        message = whole.choices[0].message
        assert whole.choices[0].finish_reason == "tool_calls" and message.content is None
        assert (
            message.model_extra["reasoning_content"] == message.model_extra["reasoning"] == first["reasoning_content"]
        )
        assert [(t.function.name, t.function.arguments) for t in message.tool_calls] == [("Bash", call["arguments"])]
        assert whole.usage.prompt_tokens == prompt_log(state)[0]["prompt_tokens"] and whole.usage.completion_tokens > 0

        history = question + [
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": first["reasoning_content"],
                "tool_calls": [
                    {"id": call["id"], "type": "function", "function": {"name": "Bash", "arguments": call["arguments"]}}
                ],
            },
            {"role": "tool", "tool_call_id": call["id"], "content": "tokenyard-scripted-42"},
        ]
        second = chat(c, history)
        assert second.choices[0].finish_reason == "stop"
        assert "tokenyard-scripted-42" in second.choices[0].message.content

        sent = prompt_log(state)[-1]["prompt_text"]
        assert "tokenyard-scripted-42" in sent
        if family == "qwen3-coder":  # XML parameters: the value, not JSON text, is what the template writes
            assert SCRIPTED_COMMAND in sent
        else:
            assert call["arguments"] in sent
        if family != "deepseek-v3.1":  # its template drops history reasoning by design
            assert first["reasoning_content"] in sent


def test_replayed_arguments_are_byte_exact(tmp_path):
    script = [
        [{"raw": '<tool_call>\n{"name": "Bash", "arguments": {"command":"ls  -la"}}\n</tool_call>'}],
        [{"text": "done"}],
    ]
    with running_server("qwen3", script=script, tmp_path=tmp_path) as (url, state):
        c = client(url)
        first = chat(
            c, [{"role": "user", "content": "go"}], extra_body={"chat_template_kwargs": {"enable_thinking": False}}
        )
        [call] = first.choices[0].message.tool_calls
        assert call.function.arguments == '{"command":"ls  -la"}'
        history = [
            {"role": "user", "content": "go"},
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": [{"type": "text", "text": "x"}]},
        ]
        reply = chat(c, history)
        assert reply.choices[0].message.content == "done"
        assert '{"command":"ls  -la"}' in prompt_log(state)[1]["prompt_text"]


def test_several_calls_in_one_turn(tmp_path):
    script = [
        [
            {"reasoning": "Two things to look at."},
            {"call": {"name": "Bash", "arguments": {"command": "ls"}}},
            {"call": {"name": "Read", "arguments": {"path": "README.md"}}},
        ]
    ]
    with running_server("kimi-k2", reasoning="kimi_k25", tools="kimi_k2", script=script, tmp_path=tmp_path) as (url, _):
        c = client(url)
        streamed = collect(chat(c, [{"role": "user", "content": "go"}], tools=(BASH, READ), stream=True))
        assert [(t["id"], t["name"], json.loads(t["arguments"])) for t in streamed["tool_calls"]] == [
            ("functions.Bash:0", "Bash", {"command": "ls"}),
            ("functions.Read:1", "Read", {"path": "README.md"}),
        ]
        assert streamed["finish_reason"] == "tool_calls" and streamed["reasoning_content"] == "Two things to look at."
        whole = chat(c, [{"role": "user", "content": "go"}], tools=(BASH, READ)).choices[0].message
        assert [(t.id, t.function.arguments) for t in whole.tool_calls] == [
            (t["id"], t["arguments"]) for t in streamed["tool_calls"]
        ]


def test_content_is_the_other_apis_text_blocks_with_the_whitespace_between_them(tmp_path):
    """Runs of text with reasoning and a call between them: `content`, streamed and
    whole, is Anthropic's text blocks with the block-edge whitespace between them
    (one string: joined with nothing, the runs' words would run together)."""
    call = '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>'
    raw = f"<think>\nr1\n</think>\n\nA first.\n\n<think>\nr2\n</think>\n\nB second. {call}\nC third."
    with running_server("qwen3", script=[[{"raw": raw}]], tmp_path=tmp_path) as (url, _):
        question = [{"role": "user", "content": "go"}]
        streamed = collect(chat(client(url), question, stream=True))
        whole = chat(client(url), question).choices[0].message
        assert streamed["content"] == whole.content
        assert whole.content.split() == "A first. B second. C third.".split()
        assert [t["name"] for t in streamed["tool_calls"]] == ["Bash"]
        message = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0).messages.create(
            model="test/model",
            max_tokens=500,
            messages=question,
            tools=[{"name": "Bash", "input_schema": BASH["function"]["parameters"]}],
        )
        assert [b.text for b in message.content if b.type == "text"] == ["A first.", "B second.", "C third."]


def test_max_tokens_cut_and_stop_sequences(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, _):
        c = client(url)
        cut = chat(c, [{"role": "user", "content": "go"}], max_tokens=20)
        assert cut.choices[0].finish_reason == "length" and cut.usage.completion_tokens == 20
        streamed = collect(
            chat(
                c,
                [{"role": "user", "content": "go"}],
                max_completion_tokens=7,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        assert streamed["finish_reason"] == "length" and streamed["usage"].completion_tokens == 7

        plain = {"tools": (), "extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}
        for stop in ("beta", ["zeta", "beta"]):
            reply = chat(c, [{"role": "user", "content": "repeat after me: alpha beta gamma"}], stop=stop, **plain)
            assert reply.choices[0].finish_reason == "stop"
            assert (
                reply.choices[0].message.content.rstrip().endswith("alpha")
                and "beta" not in reply.choices[0].message.content
            )
        free = chat(c, [{"role": "user", "content": "repeat after me: alpha beta gamma"}], **plain)
        assert free.choices[0].finish_reason == "stop" and "gamma" in free.choices[0].message.content
        assert "reasoning_content" not in free.choices[0].message.model_extra  # thinking was switched off


def test_include_usage_gives_a_final_usage_chunk(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        c = client(url)
        chunks = list(chat(c, [{"role": "user", "content": "go"}], stream=True, stream_options={"include_usage": True}))
        assert chunks[-1].choices == [] and all(ch.usage is None for ch in chunks[:-1])
        usage = chunks[-1].usage
        assert usage.prompt_tokens == prompt_log(state)[0]["prompt_tokens"]
        assert usage.prompt_tokens_details.cached_tokens == 0
        assert 0 < usage.completion_tokens_details.reasoning_tokens < usage.completion_tokens
        assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
        assert all(ch.usage is None for ch in chat(c, [{"role": "user", "content": "go"}], stream=True))


def test_request_shapes_map_onto_the_conversation(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        c = client(url)
        messages = [
            SYSTEM,
            {"role": "developer", "content": [{"type": "text", "text": "Prefer short answers."}]},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                ],
            },
        ]
        reply = chat(
            c,
            messages,
            tool_choice={"type": "function", "function": {"name": "Bash"}},
            parallel_tool_calls=False,
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}},
            seed=7,
            temperature=0.2,
            top_p=0.9,
            reasoning_effort="high",
            prompt_cache_key="cache-key-1",
            user="someone",
            extra_body={"top_k": 20, "some_future_field": 1},
        )
        assert reply.choices[0].message.tool_calls
        record = prompt_log(state)[0]
        assert "You are a coding agent." in record["prompt_text"] and "Prefer short answers." in record["prompt_text"]
        assert "[image]" in record["prompt_text"]
        assert record["session"] == "cache-key-1"
        chat(c, messages, extra_headers={"x-session-id": "header-session"}, prompt_cache_key="cache-key-1")
        assert prompt_log(state)[1]["session"] == "header-session"
        chat(c, messages, metadata={"session_id": "meta-session"})
        assert prompt_log(state)[2]["session"] == "meta-session"
        # Thinking switched off through the template's own variable.
        off = chat(c, messages, tools=(), extra_body={"chat_template_kwargs": {"enable_thinking": False}})
        assert "reasoning_content" not in off.choices[0].message.model_extra


def _post(url, body, headers=None, path="/v1/chat/completions"):
    return httpx.post(
        f"{url}{path}",
        content=body if isinstance(body, (bytes, str)) else json.dumps(body),
        headers={"content-type": "application/json", **(headers or {})},
        timeout=30,
    )


def test_errors_in_the_openai_envelope(tmp_path):
    config = ServerConfig(api_key="secret", max_body_bytes=50_000)
    good = {"model": "test/model", "messages": [{"role": "user", "content": "hi"}]}
    auth = {"authorization": "Bearer secret"}
    with running_server("qwen3", config=config, max_model_len=400, tmp_path=tmp_path) as (url, _):
        cases = [
            (_post(url, good), 401, "invalid_api_key", None),
            (_post(url, {"prompt": "x"}, path="/v1/tokenize"), 401, "invalid_api_key", None),
            (_post(url, {"tokens": [1]}, path="/v1/detokenize"), 401, "invalid_api_key", None),
            (_post(url, b"{not json", auth), 400, None, None),
            (_post(url, [good], auth), 400, None, None),
            (_post(url, {**good, "temperature": 5}, auth), 400, None, "temperature"),
            (_post(url, {**good, "messages": [{"role": "robot", "content": "x"}]}, auth), 400, None, "messages.0.role"),
            (_post(url, {**good, "messages": []}, auth), 400, None, "messages"),
            (_post(url, {**good, "n": 2}, auth), 400, None, "n"),
            (_post(url, {**good, "max_tokens": 0}, auth), 400, None, "max_tokens"),
            (_post(url, {**good, "tool_choice": "sometimes"}, auth), 400, None, "tool_choice"),
            (
                _post(url, {**good, "tool_choice": {"type": "function", "function": {"name": "Nope"}}}, auth),
                400,
                None,
                "tool_choice",
            ),
            (
                _post(url, {**good, "messages": [{"role": "tool", "content": "x"}]}, auth),
                400,
                None,
                "messages.0.tool_call_id",
            ),
            (
                _post(
                    url,
                    {**good, "messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]},
                    auth,
                ),
                400,
                None,
                "messages.0.content.0",
            ),
            (_post(url, {**good, "model": "nope/model"}, auth), 404, "model_not_found", None),
            (
                _post(url, {**good, "messages": [{"role": "user", "content": "x" * 60_000}]}, auth),
                413,
                "request_too_large",
                None,
            ),
            (
                _post(url, {**good, "messages": [{"role": "user", "content": "word " * 2000}]}, auth),
                400,
                "context_length_exceeded",
                "messages",
            ),
        ]
        for response, status, code, param in cases:
            assert response.status_code == status, response.text
            error = response.json()["error"]
            assert set(error) == {"message", "type", "param", "code"} and error["message"]
            assert (error["code"], error["param"]) == (code, param), error
        assert _post(url, good, auth).json()["object"] == "chat.completion"

        with pytest.raises(openai.AuthenticationError):
            client(url).chat.completions.create(model="test/model", messages=[{"role": "user", "content": "x"}])
        c = client(url, default_headers=auth)
        with pytest.raises(openai.BadRequestError) as raised:
            c.chat.completions.create(model="test/model", n=2, messages=[{"role": "user", "content": "x"}])
        assert raised.value.param == "n"
        with pytest.raises(openai.NotFoundError):
            c.chat.completions.create(model="other", messages=[{"role": "user", "content": "x"}])
        with pytest.raises(openai.BadRequestError) as raised:
            c.chat.completions.create(
                model="test/model", messages=[{"role": "user", "content": "word " * 2000}], stream=True
            )
        assert raised.value.code == "context_length_exceeded"


class _FailingEngine:
    def __init__(self, inner, after: int = 5):
        self.inner, self.after = inner, after

    def info(self):
        return self.inner.info()

    async def start(self):
        return None

    async def close(self):
        return None

    async def generate(self, request):
        n = 0
        async for chunk in self.inner.generate(request):
            yield chunk
            n += 1
            if n == self.after:
                raise EngineError("the engine crashed")


def test_mid_stream_failure_is_an_error_chunk_then_done(tmp_path):
    with running_server("qwen3", tmp_path=tmp_path) as (url, state):
        state.pipeline.engine = _FailingEngine(state.pipeline.engine)
        body = {"model": "test/model", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=30) as response:
            data = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
        assert data[-1] == "[DONE]"
        assert json.loads(data[-2]) == {
            "error": {"message": ENGINE_FAILED_MESSAGE, "type": "server_error", "param": None, "code": None}
        }
        assert all("finish_reason" not in d or '"finish_reason":null' in d for d in data[:-2])
        with pytest.raises(openai.APIError, match=ENGINE_FAILED_MESSAGE):
            collect(chat(client(url), [{"role": "user", "content": "hi"}], stream=True))
        # Not streamed: the failure is the response.
        with pytest.raises(openai.InternalServerError, match=ENGINE_FAILED_MESSAGE):
            chat(client(url), [{"role": "user", "content": "hi"}])


def _sse(url, body):
    """[(event name or None, data)] of a raw stream."""
    events, name = [], None
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=30) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events.append((name, line[6:] if line == "data: [DONE]" else json.loads(line[6:])))
                name = None
    return events


@pytest.mark.parametrize(
    "family,reasoning,tools", [("qwen3", None, None), ("kimi-k2", "kimi_k25", "kimi_k2"), ("gpt-oss", None, None)]
)
def test_streaming_dispatch_comes_before_each_calls_last_fragment(family, reasoning, tools, tmp_path):
    script = [
        [
            {"reasoning": "Look, then read."},
            {"call": {"name": "Bash", "arguments": {"command": "ls"}}},
            {"call": {"name": "Read", "arguments": {"path": "README.md"}}},
        ]
    ]
    config = ServerConfig(enable_streaming_tool_dispatch=True)
    with running_server(family, reasoning=reasoning, tools=tools, script=script, config=config, tmp_path=tmp_path) as (
        url,
        _,
    ):
        body = {
            "model": "test/model",
            "stream": True,
            "tools": [BASH, READ],
            "messages": [{"role": "user", "content": "go"}],
        }
        events = _sse(url, body)
        assert events[-1] == (None, "[DONE]")
        names = [name for name, _ in events]
        finish = next(
            i
            for i, (_, d) in enumerate(events)
            if isinstance(d, dict) and d["choices"] and d["choices"][0]["finish_reason"]
        )
        assert events[finish][1]["choices"][0]["finish_reason"] == "tool_calls"

        reasoning_at = names.index("reasoning_dispatch")
        assert events[reasoning_at][1]["reasoning"] == "Look, then read."
        first_call_chunk = next(
            i
            for i, (n, d) in enumerate(events)
            if n is None and isinstance(d, dict) and d["choices"] and "tool_calls" in d["choices"][0]["delta"]
        )
        assert reasoning_at < first_call_chunk

        ids = [
            c["id"]
            for _, d in events
            if isinstance(d, dict) and d["choices"]
            for c in d["choices"][0]["delta"].get("tool_calls", [])
            if c.get("id")
        ]
        assert len(ids) == 2 and (family == "kimi-k2" or all(i.startswith("call_") for i in ids))
        dispatches = [i for i, n in enumerate(names) if n == "tool_call_dispatch"]
        assert len(dispatches) == 2 and all(i < finish for i in dispatches)
        for position, at in enumerate(dispatches):
            data = events[at][1]
            assert data["choice_index"] == 0 and data["choices"] == []
            sent = data["tool_call"]
            assert sent["index"] == position and sent["type"] == "function" and sent["id"] == ids[position]
            fragments = [
                (i, c["function"].get("arguments", ""))
                for i, (n, d) in enumerate(events)
                if n is None and isinstance(d, dict) and d["choices"]
                for c in d["choices"][0]["delta"].get("tool_calls", [])
                if c["index"] == position
            ]
            assert "".join(f for _, f in fragments) == sent["function"]["arguments"]
            assert json.loads(sent["function"]["arguments"]) == (
                {"command": "ls"} if position == 0 else {"path": "README.md"}
            )
            # Sent before the chunk that carries the call's last fragment, after all the others.
            assert fragments[-2][0] < at < fragments[-1][0]

        # The official SDK streams through the named events: plain iteration and the
        # stream helper both assemble the whole turn.
        c = client(url)
        streamed = collect(chat(c, [{"role": "user", "content": "go"}], tools=(BASH, READ), stream=True))
        assert [t["name"] for t in streamed["tool_calls"]] == ["Bash", "Read"] and streamed[
            "finish_reason"
        ] == "tool_calls"
        with c.chat.completions.stream(
            model="test/model", messages=[{"role": "user", "content": "go"}], tools=[BASH, READ]
        ) as s:
            for _ in s:
                pass
            final = s.get_final_completion()
        assert [t.function.name for t in final.choices[0].message.tool_calls] == ["Bash", "Read"]
        # Not streamed: nothing to dispatch early, a plain completion.
        assert len(chat(c, [{"role": "user", "content": "go"}], tools=(BASH, READ)).choices[0].message.tool_calls) == 2


def test_keepalive_comments_during_a_slow_turn(tmp_path):
    config = ServerConfig(keepalive_seconds=0.05)
    with running_server("qwen3", token_delay=0.12, config=config, tmp_path=tmp_path) as (url, _):
        body = {"model": "test/model", "stream": True, "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=30) as response:
            lines = list(response.iter_lines())
        assert ": keepalive" in lines
        streamed = collect(chat(client(url), [{"role": "user", "content": "hi"}], tools=(), stream=True, max_tokens=3))
        assert streamed["finish_reason"] == "length"
