"""The same fault, on every API: each answers in its own envelope, and the three
agree on what happened (faults × APIs, against a real server on loopback).

Asserted with raw httpx for the envelope and status, and with the official SDKs'
exception classes for what a client program sees."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from tokenyard.engines.base import EngineChunk
from tokenyard.faults import ENGINE_FAILED_MESSAGE, EngineError
from tokenyard.server.app import ServerConfig

from ..fixtures import model_dir
from .serving import WrappedEngine, running_server

KEY = "table-key"
AUTH = {"authorization": f"Bearer {KEY}"}
REJECT = "REJECT-ME"  # the test template refuses any conversation holding this text
LONG = "word " * 3000  # over the 1024-token window


class _FaultyEngine(WrappedEngine):
    """The scripted engine, made to fail on demand: `fail_after` chunks (0: before
    the first token), to go silent after its first chunk (`stall`), to answer
    `answer` whatever was asked, or to wait at `gate` (holding the one generation slot)."""

    fail_after: int | None = None
    stall = False
    answer: str | None = None
    gate: threading.Event | None = None

    async def generate(self, request):
        if self.gate is not None:
            while not self.gate.is_set():
                await asyncio.sleep(0.01)
        if self.fail_after == 0:
            raise EngineError("the engine is down")
        if self.stall:
            yield EngineChunk(cached_tokens=0)
            await asyncio.sleep(3600)
        if self.answer is not None:
            yield EngineChunk(cached_tokens=0)
            yield EngineChunk(text=self.answer, finish_reason="stop")
            return
        n = 0
        async for chunk in self.inner.generate(request):
            yield chunk
            n += 1
            if n == self.fail_after:
                raise EngineError("the engine crashed")


def _model_with_picky_template(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(model_dir("qwen3"), folder)
    template = folder / "chat_template.jinja"
    refuse = (
        "{%- for m in messages %}{%- if '" + REJECT + "' in (m.content | string) %}"
        "{{ raise_exception('this template refuses the marker') }}{%- endif %}{%- endfor %}"
    )
    template.write_text(refuse + template.read_text())
    return folder


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("error-table")
    config = ServerConfig(api_key=KEY, max_concurrency=1, max_queue=0)
    with running_server(
        "qwen3", model_path=_model_with_picky_template(tmp_path), max_model_len=1024, config=config
    ) as (url, state):
        engine = _FaultyEngine(state.pipeline.engine)
        engine.state = state
        state.pipeline.engine = engine
        yield url, engine


APIS = ("anthropic", "chat", "responses")
PATHS = {"anthropic": "/v1/messages", "chat": "/v1/chat/completions", "responses": "/v1/responses"}


def _body(api: str, text: str = "hi", **extra) -> dict:
    if api == "anthropic":
        return {"model": "test/model", "max_tokens": 64, "messages": [{"role": "user", "content": text}], **extra}
    if api == "chat":
        return {"model": "test/model", "messages": [{"role": "user", "content": text}], **extra}
    return {"model": "test/model", "input": text, **extra}


_SCHEMA = {
    "anthropic": {"model": "test/model", "max_tokens": 64, "messages": "nope"},
    "chat": {"model": "test/model", "messages": "nope"},
    "responses": {"model": "test/model", "input": 5},
}
_CONVERSATION = {"anthropic": "messages", "chat": "messages", "responses": "input"}

# fault → (Anthropic status and type, OpenAI status, type and code; param is per API)
TABLE = {
    "bad_json": ((400, "invalid_request_error"), (400, "invalid_request_error", None)),
    "schema": ((400, "invalid_request_error"), (400, "invalid_request_error", None)),
    "unknown_model": ((404, "not_found_error"), (404, "invalid_request_error", "model_not_found")),
    "bad_auth": ((401, "authentication_error"), (401, "invalid_request_error", "invalid_api_key")),
    "template": ((400, "invalid_request_error"), (400, "invalid_request_error", "invalid_prompt")),
    "too_long": ((400, "invalid_request_error"), (400, "invalid_request_error", "context_length_exceeded")),
    "engine_down": ((502, "api_error"), (502, "server_error", None)),
    "overloaded": ((529, "overloaded_error"), (429, "server_error", "overloaded")),
    "engine_timeout": ((504, "timeout_error"), (504, "server_error", None)),
    # The model broke a forced tool_choice: the request's answer, not a server fault.
    "tool_choice_violation": ((400, "invalid_request_error"), (400, "invalid_request_error", "tool_use_failed")),
}
# fault → the param the OpenAI envelopes name (per API where it is the conversation)
PARAMS = {"schema": "conversation", "template": "conversation", "too_long": "conversation"}

ANTHROPIC_EXCEPTIONS = {
    400: anthropic.BadRequestError,
    401: anthropic.AuthenticationError,
    404: anthropic.NotFoundError,
    500: anthropic.InternalServerError,
    502: anthropic.InternalServerError,
    504: anthropic.InternalServerError,
    529: anthropic.OverloadedError,
}
OPENAI_EXCEPTIONS = {
    400: openai.BadRequestError,
    401: openai.AuthenticationError,
    404: openai.NotFoundError,
    429: openai.RateLimitError,
    500: openai.InternalServerError,
    502: openai.InternalServerError,
    504: openai.InternalServerError,
}


def _request(url: str, api: str, fault: str) -> tuple[dict | bytes, dict]:
    """The body (or raw bytes) and headers that cause `fault` on `api`."""
    if fault == "bad_json":
        return b'{"model": ', AUTH
    if fault == "schema":
        return _SCHEMA[api], AUTH
    if fault == "unknown_model":
        return {**_body(api), "model": "nope/model"}, AUTH
    if fault == "bad_auth":
        return _body(api), {"authorization": "Bearer wrong"}
    if fault == "template":
        return _body(api, f"please {REJECT}"), AUTH
    if fault == "too_long":
        return _body(api, LONG), AUTH
    if fault == "tool_choice_violation":
        return {**_body(api), **_FORCED_TOOL[api]}, AUTH
    return _body(api), AUTH


_SCHEMA_OBJECT = {"type": "object", "properties": {"command": {"type": "string"}}}
# A request that must call the tool (the engine then answers with text only).
_FORCED_TOOL = {
    "anthropic": {
        "tools": [{"name": "Bash", "input_schema": _SCHEMA_OBJECT}],
        "tool_choice": {"type": "any"},
    },
    "chat": {
        "tools": [{"type": "function", "function": {"name": "Bash", "parameters": _SCHEMA_OBJECT}}],
        "tool_choice": "required",
    },
    "responses": {
        "tools": [{"type": "function", "name": "Bash", "parameters": _SCHEMA_OBJECT}],
        "tool_choice": "required",
    },
}


def _post(url: str, api: str, body: dict | bytes, headers: dict) -> httpx.Response:
    headers = {"content-type": "application/json", **headers}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{url}{PATHS[api]}", content=content, headers=headers, timeout=30)


def _sdk_call(url: str, api: str, body: dict, headers: dict) -> None:
    key = headers["authorization"].removeprefix("Bearer ")
    if api == "anthropic":
        anthropic.Anthropic(base_url=url, api_key=key, max_retries=0).messages.create(**body)
    elif api == "chat":
        openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0).chat.completions.create(**body)
    else:
        openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0).responses.create(**body)


@pytest.fixture
def condition(server):
    """Puts the engine in the state a fault needs, and back afterwards."""
    url, engine = server
    state = engine.state
    timeout = state.pipeline.engine_timeout
    held: list = []

    def arrange(fault: str) -> None:
        if fault == "engine_down":
            engine.fail_after = 0
        if fault == "engine_timeout":
            engine.stall = True
            state.pipeline.engine_timeout = 0.5
        if fault == "tool_choice_violation":
            engine.answer = "I would rather not call a tool."
        if fault == "overloaded":  # a stream holds the only slot; the queue takes no one
            engine.gate = threading.Event()
            stream = httpx.stream("POST", f"{url}/v1/chat/completions", json=_body("chat", stream=True), headers=AUTH)
            held.append((stream, stream.__enter__()))

    yield arrange
    engine.fail_after = None
    engine.stall = False
    engine.answer = None
    state.pipeline.engine_timeout = timeout
    if engine.gate is not None:
        engine.gate.set()
        engine.gate = None
    for stream, _ in held:
        stream.__exit__(None, None, None)


@pytest.mark.parametrize("fault", list(TABLE))
def test_each_api_answers_a_fault_in_its_own_envelope(server, condition, fault):
    url, _ = server
    condition(fault)
    for api in APIS:
        body, headers = _request(url, api, fault)
        response = _post(url, api, body, headers)
        error = response.json()
        if api == "anthropic":
            status, kind = TABLE[fault][0]
            assert response.status_code == status, response.text
            assert error["type"] == "error" and set(error["error"]) == {"type", "message"}, error
            assert error["error"]["type"] == kind and error["error"]["message"]
        else:
            status, kind, code = TABLE[fault][1]
            param = _CONVERSATION[api] if PARAMS.get(fault) == "conversation" else None
            assert response.status_code == status, response.text
            assert set(error) == {"error"} and set(error["error"]) == {"message", "type", "param", "code"}, error
            assert (error["error"]["type"], error["error"]["code"], error["error"]["param"]) == (kind, code, param)
        if fault == "too_long":  # Claude Code compacts on this phrase; OpenAI clients on the code
            assert "prompt is too long" in error["error"]["message"]
        if isinstance(body, dict):
            exception = (ANTHROPIC_EXCEPTIONS if api == "anthropic" else OPENAI_EXCEPTIONS)[response.status_code]
            with pytest.raises(exception) as raised:
                _sdk_call(url, api, body, headers)
            assert raised.value.status_code == response.status_code
            if api != "anthropic":
                assert (raised.value.code, raised.value.param) == (error["error"]["code"], error["error"]["param"])


def _frames(url: str, api: str) -> list[tuple[str | None, str]]:
    frames, name = [], None
    with httpx.stream("POST", f"{url}{PATHS[api]}", json=_body(api, stream=True), headers=AUTH, timeout=30) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                frames.append((name, line[6:]))
                name = None
    return frames


@pytest.fixture
def failing(server):
    url, engine = server

    def fail(after: int) -> None:
        engine.fail_after = after

    yield fail
    engine.fail_after = None


@pytest.mark.parametrize("fail_after", [0, 3], ids=["before-first-token", "mid-stream"])
def test_an_engine_failure_in_a_stream_ends_it_with_each_apis_own_error(server, failing, fail_after):
    url, _ = server
    failing(fail_after)
    message = ENGINE_FAILED_MESSAGE  # the engine's own words stay in the log

    frames = _frames(url, "anthropic")
    assert frames[0][0] == "message_start" and frames[-1][0] == "error"
    assert json.loads(frames[-1][1]) == {"type": "error", "error": {"type": "api_error", "message": message}}
    assert "message_stop" not in [name for name, _ in frames]

    frames = _frames(url, "chat")
    assert frames[-1] == (None, "[DONE]")
    error = json.loads(frames[-2][1])
    assert error == {"error": {"message": message, "type": "server_error", "param": None, "code": None}}

    frames = _frames(url, "responses")
    failed = json.loads(frames[-1][1])
    assert frames[-1][0] == "response.failed" and failed["response"]["status"] == "failed"
    assert failed["response"]["error"] == {"code": "server_error", "message": message}

    # What the SDKs make of it.
    with pytest.raises(anthropic.APIError, match=message):
        with anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0).messages.stream(
            **_body("anthropic")
        ) as stream:
            list(stream)
    sdk = openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0)
    with pytest.raises(openai.APIError, match=message):
        list(sdk.chat.completions.create(**_body("chat"), stream=True))
    events = list(sdk.responses.create(**_body("responses"), stream=True))
    assert events[-1].type == "response.failed" and events[-1].response.error.code == "server_error"


@pytest.mark.parametrize("fault", ["engine_timeout", "tool_choice_violation"])
def test_a_timeout_and_a_broken_tool_choice_end_a_stream_with_their_own_error(server, condition, fault):
    """Each has its own row, also once the stream has started: the error event
    carries the row's type, and the SDKs raise on it."""
    url, _ = server
    condition(fault)
    (_, anthropic_type), (_, openai_type, openai_code) = TABLE[fault]
    for api in APIS:
        body, headers = _request(url, api, fault)
        frames, name = [], None
        with httpx.stream(
            "POST", f"{url}{PATHS[api]}", json={**body, "stream": True}, headers=headers, timeout=30
        ) as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    frames.append((name, line[6:]))
                    name = None
        if api == "anthropic":
            assert frames[-1][0] == "error"
            assert json.loads(frames[-1][1])["error"]["type"] == anthropic_type
        elif api == "chat":
            assert frames[-1] == (None, "[DONE]")
            assert json.loads(frames[-2][1])["error"]["type"] == openai_type
        else:
            failed = json.loads(frames[-1][1])
            assert frames[-1][0] == "response.failed" and failed["response"]["error"]["code"] == (
                openai_code or "server_error"
            )
        assert not any(n in ("message_stop", "response.completed") for n, _ in frames)
