"""The wire contract between tokenyard's remote engine and SGLang's `/v1/completions`,
pinned from SGLang's own source so that a drift on either side fails here.

SGLang does not run in CI (its CPU backend needs `sgl-kernel` built from source for
CPU; PyPI's `sglang-kernel` wheels are CUDA-only — see README, *Engines*), so these
facts stand in for a live server. Source: the `sglang` 0.5.23 wheel on PyPI
(sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl, sha256 00b3cd5b265a…9937):
- `sglang/srt/entrypoints/openai/protocol.py`: `CompletionRequest` (with its base
  `PDRoutingFields`), `StreamOptions`, `CompletionResponseStreamChoice`,
  `CompletionStreamResponse`, `UsageInfo`, `PromptTokensDetails`, `ModelCard`,
  `ErrorResponse`;
- `sglang/srt/entrypoints/openai/serving_completions.py`: the stream — each chunk's
  `token_ids` is the new part of `output_ids` (with `return_token_ids`), the first
  also carries `prompt_token_ids`; the final usage chunk (`include_usage`) has empty
  `choices` and, with `--enable-cache-report`, `prompt_tokens_details.cached_tokens`;
  it is dumped with `exclude_none`; then `data: [DONE]`. A streamed response runs
  with `background=create_abort_task(...)`: the client closing the stream aborts the
  request. An abort with a status code becomes `{"error": ErrorResponse}` mid-stream;
  a graceful one a chunk with `finish_reason: "abort"`;
- `sglang/srt/managers/detokenizer_manager.py` (`trim_matched_stop`): a matched stop
  token is trimmed from the text only; `output_ids` (hence `token_ids`) keep it, and
  the finish is `{"type": "stop", "matched": <id>}` (`matched_stop` on the wire);
- `CompletionRequest` is a pydantic model with the default config: unknown fields are
  ignored silently, which is why a misspelt or vLLM-only field would go unnoticed
  without this list.
The stream's shape matches SGLang's own tests of it
(sgl-project/sglang test/registered/openai_server/basic/test_return_token_ids.py at
0b891eb2ed7b: `token_ids`/`prompt_token_ids` omitted when not asked for).
"""

from __future__ import annotations

import asyncio
import json
import threading

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from tokenyard.conversation import AgentHints, Conversation
from tokenyard.engines.base import CallGuide, CallTag, Constraints, EngineChunk, EngineRequest
from tokenyard.engines.remote import CompletionStreamReader, RemoteEngine, structural_tag
from tokenyard.faults import EngineError

from .test_remote import running

SGLANG_VERSION = "0.5.23"
# protocol.py, CompletionRequest + PDRoutingFields: every field SGLang 0.5.23 reads.
SGLANG_COMPLETION_REQUEST_FIELDS = frozenset(
    "model prompt best_of echo frequency_penalty logit_bias logprobs max_tokens n presence_penalty seed stop "
    "stream stream_options suffix temperature top_p user return_hidden_states return_routed_experts "
    "routed_experts_start_len return_cached_tokens_details return_spec_tokens_details return_token_ids top_k "
    "min_p min_tokens json_schema regex ebnf repetition_penalty stop_token_ids stop_regex no_stop_trim "
    "ignore_eos skip_special_tokens lora_path session_id session_params response_format custom_params "
    "custom_logit_processor watermark images_config mm_processor_kwargs data_parallel_rank rid extra_key "
    "cache_salt priority custom_labels bootstrap_host bootstrap_port bootstrap_room routed_dp_rank "
    "disagg_prefill_dp_rank".split()
)
SGLANG_STREAM_OPTIONS_FIELDS = frozenset({"include_usage", "continuous_usage_stats"})
# What tokenyard sends that SGLang ignores, and why that is harmless.
IGNORED_BY_SGLANG = {
    # vLLM's detokenizer option; tokenyard detokenizes the returned ids itself.
    "spaces_between_special_tokens",
}
STOP_ID = 151645
PROMPT = [151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198]
OUTPUT = [9707, 0, 151657]


def engine_request(**overrides) -> EngineRequest:
    fields = {"request_id": "r1", "prompt_token_ids": PROMPT, "max_tokens": 16, "stop_token_ids": [STOP_ID]}
    return EngineRequest(**{**fields, **overrides})


def test_the_request_body_uses_only_fields_sglang_declares():
    engine = RemoteEngine("http://127.0.0.1:1", model="m", max_model_len=4096)
    body = engine.completion_body(engine_request(temperature=0.0, top_p=0.9, top_k=20, seed=7))
    assert set(body) - IGNORED_BY_SGLANG <= SGLANG_COMPLETION_REQUEST_FIELDS, (
        set(body) - IGNORED_BY_SGLANG - SGLANG_COMPLETION_REQUEST_FIELDS
    )
    assert set(body["stream_options"]) <= SGLANG_STREAM_OPTIONS_FIELDS
    # The parts of the contract tokenyard depends on, by name and shape.
    assert body["prompt"] == PROMPT  # List[int]: a token-id prompt, no chat template there
    assert body["stop_token_ids"] == [STOP_ID]
    assert body["return_token_ids"] is True
    assert body["skip_special_tokens"] is False
    assert body["stream"] is True and body["stream_options"]["include_usage"] is True


def test_forced_tool_choice_guide_is_not_an_sglang_field():
    """vLLM takes the guide as `structured_outputs.structural_tag`; SGLang 0.5.23 has no
    such field (it would be ignored, so a forced call would go unguided). SGLang takes
    xgrammar's structural tag as `response_format`, whose shape tokenyard's tag has."""
    assert "structured_outputs" not in SGLANG_COMPLETION_REQUEST_FIELDS
    assert "response_format" in SGLANG_COMPLETION_REQUEST_FIELDS
    guide = CallGuide(("<tool_call>",), (CallTag('<tool_call>\n{"name": "f", "arguments": ', {"type": "object"}, "}\n</tool_call>"),))  # fmt: skip
    tag = structural_tag(Constraints(tool_choice="required", guide=guide))
    assert tag is not None and tag["type"] == "structural_tag" and tag["format"]["type"] == "triggered_tags"


def test_a_forwarded_priority_is_lower_first_which_sglang_does_only_when_told():
    """tokenyard forwards priorities the vLLM way (lower value first). SGLang
    (arg_groups/fields/schedule.py) schedules higher values first unless started with
    `--enable-priority-scheduling --schedule-low-priority-values-first` — the flags the
    README gives with `--forward-priority` for SGLang."""
    engine = RemoteEngine("http://127.0.0.1:1", model="m", max_model_len=4096, forward_priority=True)
    urgent = Conversation(model="m", hints=AgentHints(priority=5))
    assert engine.completion_body(engine_request(conversation=urgent))["priority"] == -5
    assert "priority" in SGLANG_COMPLETION_REQUEST_FIELDS


def sse(payload: dict) -> str:
    return f"data: {json.dumps(payload)}\n\n"


def chunk(text: str, token_ids: list[int], finish: str | None = None, matched=None, first=False) -> str:
    """A `CompletionStreamResponse` as serving_completions.py dumps it (no exclude_none:
    `logprobs`, `finish_reason` and `matched_stop` are written as null)."""
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish, "matched_stop": matched}
    choice["token_ids"] = token_ids
    if first:
        choice["prompt_token_ids"] = PROMPT
    return sse({"id": "9f1c", "object": "text_completion", "created": 1767225600, "model": "m", "choices": [choice]})


def usage(cached: int | None) -> str:
    """The final usage chunk (`exclude_none`): `prompt_tokens_details` only with
    `--enable-cache-report`."""
    body: dict = {"prompt_tokens": len(PROMPT), "total_tokens": len(PROMPT) + 3, "completion_tokens": 3}
    if cached is not None:
        body["prompt_tokens_details"] = {"cached_tokens": cached}
    body["reasoning_tokens"] = 0
    return sse({"id": "9f1c", "object": "text_completion", "created": 1767225600, "model": "m", "choices": [], "usage": body})  # fmt: skip


def sglang_stream(cached: int | None, stop_at_token: bool = True) -> list[str]:
    last = [*OUTPUT[2:], STOP_ID] if stop_at_token else OUTPUT[2:]
    return [
        chunk("Hello", OUTPUT[:1], first=True),
        chunk("!", OUTPUT[1:2]),
        # The stop token is trimmed from the text, not from the ids.
        chunk("<tool_call>", last, "stop" if stop_at_token else "length", STOP_ID if stop_at_token else None),
        usage(cached),
        "data: [DONE]\n\n",
    ]


def read(lines: list[str]) -> list[EngineChunk]:
    reader = CompletionStreamReader({STOP_ID}, "sglang")
    chunks = [c for block in lines for line in block.splitlines() if (c := reader.feed(line)) is not None]
    return [*chunks, reader.finish()]


def test_an_sglang_stream_is_read_as_token_ids_with_the_cache_report():
    chunks = read(sglang_stream(cached=6))
    assert [c.token_ids for c in chunks] == [OUTPUT[:1], OUTPUT[1:2], OUTPUT[2:]]  # stop id dropped
    assert all(c.text is None for c in chunks)
    assert [c.finish_reason for c in chunks] == [None, None, "stop"]
    assert chunks[-1].cached_tokens == 6


def test_without_enable_cache_report_no_cached_count_is_invented():
    chunks = read(sglang_stream(cached=None, stop_at_token=False))
    assert chunks[-1].finish_reason == "length" and chunks[-1].token_ids == OUTPUT[2:]
    assert chunks[-1].cached_tokens is None


def test_an_sglang_abort_is_an_abort_and_an_error_chunk_an_engine_error():
    graceful = [chunk("Hi", OUTPUT[:1], first=True), chunk("", [], "abort"), "data: [DONE]\n\n"]
    assert read(graceful)[-1].finish_reason == "abort"
    # serving_base.py create_streaming_error_response: {"error": ErrorResponse}
    error = {"object": "error", "message": "Request aborted: timeout", "type": "SERVICE_UNAVAILABLE", "param": None, "code": 503}  # fmt: skip
    reader = CompletionStreamReader({STOP_ID}, "sglang")
    reader.feed(chunk("Hi", OUTPUT[:1], first=True).strip())
    try:
        reader.feed(sse({"error": error}).strip())
    except EngineError as failure:
        assert "Request aborted: timeout" in str(failure)
    else:
        raise AssertionError("an SGLang error chunk must fail the generation")


def test_over_http_the_model_card_window_is_read_and_closing_the_stream_reaches_sglang():
    """An app answering as SGLang does (ModelCard with `max_model_len`, the stream
    above); closing tokenyard's stream early must end the HTTP request, which is what
    makes SGLang's `create_abort_task` abort it."""
    bodies: list[dict] = []
    went_away = threading.Event()

    async def models(_: Request) -> JSONResponse:
        card = {"id": "m", "object": "model", "created": 0, "owned_by": "sglang", "root": "m", "parent": None}
        return JSONResponse({"object": "list", "data": [{**card, "max_model_len": 32768}]})

    async def completions(request: Request) -> StreamingResponse:
        bodies.append(await request.json())

        async def stream():
            try:
                yield chunk("Hello", OUTPUT[:1], first=True)
                while True:
                    await asyncio.sleep(0.02)
                    yield chunk("!", OUTPUT[1:2])
            finally:
                went_away.set()

        return StreamingResponse(stream(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/models", models), Route("/v1/completions", completions, methods=["POST"])])
    with running(app) as url:

        async def run() -> tuple[int, list[int]]:
            engine = RemoteEngine(url)
            await engine.start()
            try:
                stream = engine.generate(engine_request())
                first = await anext(stream)
                await stream.aclose()
                return engine.info().max_model_len, first.token_ids
            finally:
                await engine.close()

        window, first_ids = asyncio.run(asyncio.wait_for(run(), 10))
        assert went_away.wait(5)
    assert window == 32768 and first_ids == OUTPUT[:1]
    assert bodies[0]["model"] == "m" and set(bodies[0]) - IGNORED_BY_SGLANG <= SGLANG_COMPLETION_REQUEST_FIELDS
