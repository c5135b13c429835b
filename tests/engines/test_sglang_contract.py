"""The wire contract between tokenyard's remote engine and SGLang's native `/generate`,
pinned from SGLang's own source so that a drift on either side fails here.

No real SGLang runs here or in CI: its CPU backend needs `sgl-kernel` built for the
CPU, which PyPI does not have (README, *Engines*). These facts stand in for a live
server, and the HTTP tests run the engine against a stand-in that answers in the
shapes below. Source: the `sglang` 0.5.23 wheel on PyPI
(sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl, sha256 00b3cd5b265a…9937):
- `sglang/api/v1/api_types.py` (generated from SGLang's proto schema, the contract
  `/generate` checks every body against, `entrypoints/api_contract.py`):
  `GenerateRequest` (unknown keys ignored), `SamplingParams` (unknown keys
  REJECTED: a misspelt sampling field is a 400), `GenerateResponse`,
  `GenerateMetaInfo` (`cached_tokens`, `completion_tokens`, `finish_reason`),
  `FinishStop` (`matched`), `FinishLength`, `FinishAbort`;
- `sglang/srt/entrypoints/http_server.py`: `/generate` streams `data: {json}` lines
  then `data: [DONE]`, with `background=create_abort_task(obj)` (a client that closes
  the stream aborts the request); an error inside the stream is a
  `{"error": {"message", "type", "code"}}` line; `/v1/models` cards are
  `ModelCard(owned_by="sglang", max_model_len=context_len)` (protocol.py); `/server_info`
  is the resolved start-up settings (`schedule_low_priority_values_first`...);
- `sglang/srt/managers/tokenizer_manager.py`: a streamed chunk's `output_ids` are all
  the ids so far, or the new ones with `--incremental-streaming-output`;
  `meta_info.completion_tokens` is the count so far either way; the matched stop token
  stays in `output_ids` (the detokenizer trims it from the text only); a prompt over
  the context is `ValueError("The input (N tokens) is longer than the model's context
  length (M tokens).")`;
- `sglang/srt/constrained/xgrammar_backend.py`: `structural_tag` takes xgrammar's
  tag with a `format` (the shape tokenyard sends vLLM); `sampling/sampling_params.py`:
  only one of json_schema, regex, ebnf, structural_tag per request;
- `sglang/srt/managers/scheduler.py`: priorities are honoured only with
  `--enable-priority-scheduling`, higher values first unless
  `--schedule-low-priority-values-first`.
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from tokenyard.conversation import AgentHints, Conversation
from tokenyard.engines.base import CallGuide, CallTag, Constraints, EngineChunk, EngineRequest, OutputGuide
from tokenyard.engines.remote import RemoteEngine, SglangStreamReader
from tokenyard.faults import EngineError, PromptTooLong

from .test_remote import running

# api_types.py, GenerateRequest: every field SGLang 0.5.23's /generate reads.
GENERATE_REQUEST_FIELDS = frozenset(
    "rid text input_ids stream sampling_params return_logprob logprob_start_len top_logprobs_num "
    "token_ids_logprob return_hidden_states return_text_in_logprobs bootstrap_host bootstrap_port "
    "bootstrap_room bootstrap_pair_key decode_tp_size routed_dp_rank disagg_prefill_dp_rank image_data "
    "mm_hashes video_data audio_data extra_key priority cache_salt require_reasoning lora_path "
    "session_params kv_hints routing_key max_thinking_tokens session_id custom_logit_processor "
    "custom_labels images_config return_prompt_token_ids routed_experts_start_len return_sampling_mask "
    "modalities".split()
)
# api_types.py, SamplingParams (unknown keys rejected).
SAMPLING_PARAMS_FIELDS = frozenset(
    "max_new_tokens stop stop_token_ids stop_regex temperature top_p top_k min_p frequency_penalty "
    "presence_penalty repetition_penalty min_new_tokens n json_schema regex ebnf structural_tag ignore_eos "
    "skip_special_tokens spaces_between_special_tokens no_stop_trim stream_interval logit_bias "
    "sampling_seed custom_params beam_width watermark choice".split()
)
GRAMMARS = ("json_schema", "regex", "ebnf", "structural_tag")
STOP_ID = 151645
PROMPT = [151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198]
OUTPUT = [9707, 0, 151657]
GUIDE = CallGuide(("<tool_call>",), (CallTag('<tool_call>\n{"name": "f", "arguments": ', {"type": "object"}, "}\n</tool_call>"),))  # fmt: skip


def engine_request(**overrides) -> EngineRequest:
    fields = {"request_id": "r1", "prompt_token_ids": PROMPT, "max_tokens": 16, "stop_token_ids": [STOP_ID]}
    return EngineRequest(**{**fields, **overrides})


def sglang_engine(**options) -> RemoteEngine:
    return RemoteEngine("http://127.0.0.1:1", model="m", max_model_len=4096, server="sglang", **options)


def check_contract(body: dict) -> None:
    assert set(body) <= GENERATE_REQUEST_FIELDS, set(body) - GENERATE_REQUEST_FIELDS
    assert set(body["sampling_params"]) <= SAMPLING_PARAMS_FIELDS, set(body["sampling_params"]) - SAMPLING_PARAMS_FIELDS
    assert sum(key in body["sampling_params"] for key in GRAMMARS) <= 1, "SGLang takes one grammar per request"


# ---- the request ---------------------------------------------------------------------------------


def test_the_request_is_a_token_id_prompt_with_declared_fields_only():
    body = sglang_engine().sglang_body(
        engine_request(temperature=0.0, top_p=0.9, top_k=20, seed=7, frequency_penalty=0.5, presence_penalty=0.25)
    )
    check_contract(body)
    assert body["input_ids"] == PROMPT and "text" not in body  # no chat template on SGLang's side
    assert body["stream"] is True
    sampling = body["sampling_params"]
    assert sampling["max_new_tokens"] == 16 and sampling["stop_token_ids"] == [STOP_ID]
    assert sampling["skip_special_tokens"] is False
    assert (sampling["temperature"], sampling["top_p"], sampling["top_k"], sampling["sampling_seed"]) == (
        0.0,
        0.9,
        20,
        7,
    )
    assert sampling["frequency_penalty"] == 0.5  # a model's declared penalty (SmolLM2's) reaches SGLang too
    assert sampling["presence_penalty"] == 0.25


@pytest.mark.parametrize("choice", ["required", "named"])
def test_a_forced_tool_choice_is_guided_by_a_structural_tag(choice):
    constraints = Constraints(tool_choice=choice, tool_name="f" if choice == "named" else None, guide=GUIDE)
    body = sglang_engine().sglang_body(engine_request(constraints=constraints))
    check_contract(body)
    tag = json.loads(body["sampling_params"]["structural_tag"])  # a JSON string
    assert tag["type"] == "structural_tag" and tag["format"]["type"] == "triggered_tags"
    assert tag["format"]["at_least_one"] is True and tag["format"]["triggers"] == ["<tool_call>"]
    assert tag["format"]["tags"][0]["begin"].startswith("<tool_call>")


def test_a_json_answer_is_guided_by_json_schema_or_after_reasoning_by_a_tag():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    plain = sglang_engine().sglang_body(engine_request(constraints=Constraints(output=OutputGuide(schema))))
    check_contract(plain)
    assert json.loads(plain["sampling_params"]["json_schema"]) == schema
    thinking = OutputGuide(schema, reasoning_start="<think>", reasoning_end="</think>")
    body = sglang_engine().sglang_body(engine_request(constraints=Constraints(output=thinking)))
    check_contract(body)
    assert json.loads(body["sampling_params"]["structural_tag"])["type"] == "structural_tag"
    may_call = OutputGuide(schema, call_trigger="<tool_call>")
    body = sglang_engine().sglang_body(engine_request(constraints=Constraints(output=may_call)))
    assert not set(GRAMMARS) & set(body["sampling_params"]), "a turn that may call is not held to the format"
    both = Constraints(tool_choice="required", guide=GUIDE, output=OutputGuide(schema))
    check_contract(sglang_engine().sglang_body(engine_request(constraints=both)))


def test_priority_follows_sglangs_order():
    urgent = Conversation(model="m", hints=AgentHints(priority=5))
    assert "priority" not in sglang_engine().sglang_body(engine_request(conversation=urgent))
    engine = sglang_engine(forward_priority=True)
    assert engine.sglang_body(engine_request(conversation=urgent))["priority"] == 5  # higher first
    engine._low_priority_first = True  # what /server_info says under --schedule-low-priority-values-first
    assert engine.sglang_body(engine_request(conversation=urgent))["priority"] == -5


# ---- the stream ----------------------------------------------------------------------------------


def line(ids: list[int], done: int, finish: dict | None = None, cached: int = 6, text: str = "") -> str:
    meta = {"id": "9f1c", "finish_reason": finish, "prompt_tokens": len(PROMPT), "weight_version": "default"}
    meta.update(completion_tokens=done, cached_tokens=cached, reasoning_tokens=0)
    return f"data: {json.dumps({'text': text, 'output_ids': ids, 'meta_info': meta})}"


STOPPED = {"type": "stop", "matched": STOP_ID}
CUMULATIVE = [line(OUTPUT[:1], 1), line(OUTPUT[:2], 2), line([*OUTPUT, STOP_ID], 4, STOPPED), "data: [DONE]"]
INCREMENTAL = [line(OUTPUT[:1], 1), line(OUTPUT[1:2], 2), line([*OUTPUT[2:], STOP_ID], 4, STOPPED), "data: [DONE]"]


def read(lines: list[str]) -> list[EngineChunk]:
    reader = SglangStreamReader({STOP_ID}, "sglang")
    chunks = [c for one in lines if (c := reader.feed(one)) is not None]
    return [*chunks, reader.finish()]


@pytest.mark.parametrize("lines", [CUMULATIVE, INCREMENTAL], ids=["cumulative", "incremental"])
def test_output_ids_cumulative_or_incremental_the_stop_token_dropped(lines):
    chunks = read(lines)
    assert [c.token_ids for c in chunks] == [OUTPUT[:1], OUTPUT[1:2], OUTPUT[2:]]
    assert all(c.text is None for c in chunks)
    assert [c.finish_reason for c in chunks] == [None, None, "stop"]
    assert chunks[0].cached_tokens == 6 and chunks[-1].cached_tokens == 6


def test_length_and_abort():
    chunks = read([line(OUTPUT[:2], 2), line(OUTPUT, 3, {"type": "length", "length": 3}), "data: [DONE]"])
    assert chunks[-1].finish_reason == "length" and chunks[-1].token_ids == OUTPUT[2:]
    aborted = {"type": "abort", "message": "Abort before prefill", "status_code": 503}
    assert read([line([], 0, aborted, cached=0)])[-1].finish_reason == "abort"
    # --incremental-streaming-output: an abort's last line repeats the last id, not a new one.
    chunks = read([line(OUTPUT[:1], 1), line(OUTPUT[1:2], 2), line(OUTPUT[1:2], 2, aborted)])
    assert [c.token_ids for c in chunks] == [OUTPUT[:1], OUTPUT[1:2], []] and chunks[-1].finish_reason == "abort"


def test_errors_are_engine_errors_and_the_context_error_a_prompt_too_long():
    message = "The input (5000 tokens) is longer than the model's context length (4096 tokens)."
    error = {"error": {"message": message, "type": "invalid_request_error", "code": 400, "retryable": False}}
    with pytest.raises(PromptTooLong) as caught:
        SglangStreamReader({STOP_ID}, "sglang").feed(f"data: {json.dumps(error)}")
    assert (caught.value.prompt_tokens, caught.value.max_model_len) == (5000, 4096)
    with pytest.raises(EngineError, match="not a /generate chunk"):
        SglangStreamReader({STOP_ID}, "sglang").feed('data: {"choices": []}')
    with pytest.raises(EngineError, match="without a finish reason"):
        read([line(OUTPUT[:1], 1)])


# ---- over HTTP, against a stand-in ---------------------------------------------------------------


class StandIn:
    """Answers as SGLang does: `/v1/models`, `/server_info`, a streamed `/generate`
    (cumulative ids), or the context error; it records bodies and disconnects."""

    def __init__(self, low_priority_first: bool = False):
        self.bodies: list[dict] = []
        self.went_away = threading.Event()
        self.low_priority_first = low_priority_first
        self.endless = False

    def app(self) -> Starlette:
        async def models(_: Request) -> JSONResponse:
            card = {"id": "m", "object": "model", "created": 0, "owned_by": "sglang", "root": "m", "parent": None}
            return JSONResponse({"object": "list", "data": [{**card, "max_model_len": 32768}]})

        async def server_info(_: Request) -> JSONResponse:
            return JSONResponse(
                {"enable_priority_scheduling": True, "schedule_low_priority_values_first": self.low_priority_first}
            )

        async def generate(request: Request) -> StreamingResponse | JSONResponse:
            body = await request.json()
            self.bodies.append(body)
            if len(body["input_ids"]) > 32768:
                return JSONResponse(
                    {
                        "error": {
                            "message": "The input (40000 tokens) is longer than the model's context length (32768 tokens)."
                        }
                    },  # fmt: skip
                    status_code=400,
                )

            async def stream():
                try:
                    if self.endless:
                        n = 0
                        while True:
                            n += 1
                            yield line(OUTPUT[:1] * n, n) + "\n\n"
                            await asyncio.sleep(0.02)
                    for one in CUMULATIVE:
                        yield one + "\n\n"
                finally:
                    self.went_away.set()

            return StreamingResponse(stream(), media_type="text/event-stream")

        routes = [Route("/v1/models", models), Route("/server_info", server_info)]
        return Starlette(routes=[*routes, Route("/generate", generate, methods=["POST"])])


def generate(url: str, request: EngineRequest, *, first_only: bool = False, **options) -> tuple[RemoteEngine, list]:
    async def run():
        engine = RemoteEngine(url, **options)
        await engine.start()
        try:
            stream = engine.generate(request)
            if first_only:
                first = await anext(stream)
                await stream.aclose()
                return engine, [first]
            return engine, [c async for c in stream]
        finally:
            await engine.close()

    return asyncio.run(asyncio.wait_for(run(), 10))


def test_over_http_sglang_is_recognised_and_generate_streams_token_ids():
    stand_in = StandIn(low_priority_first=True)
    with running(stand_in.app()) as url:
        urgent = Conversation(model="m", hints=AgentHints(priority=3))
        engine, chunks = generate(url, engine_request(conversation=urgent), forward_priority=True)
    assert engine.server == "sglang" and engine.info().max_model_len == 32768
    # What one read brings is one chunk (remote.merge_chunks): the ids, not the boundaries, are the contract.
    assert [t for c in chunks for t in c.token_ids] == OUTPUT
    assert chunks[-1].finish_reason == "stop" and chunks[-1].cached_tokens == 6
    check_contract(stand_in.bodies[0])
    assert stand_in.bodies[0]["priority"] == -3, "/server_info said lower values first"


def test_over_http_closing_the_stream_ends_the_request_there():
    """What makes SGLang's `create_abort_task` abort the request."""
    stand_in = StandIn()
    stand_in.endless = True
    with running(stand_in.app()) as url:
        _, chunks = generate(url, engine_request(), first_only=True)
        assert stand_in.went_away.wait(5)
    assert chunks[0].token_ids == OUTPUT[:1]


def test_over_http_the_context_error_is_a_prompt_too_long():
    with running(StandIn().app()) as url, pytest.raises(PromptTooLong):
        generate(url, engine_request(prompt_token_ids=[1] * 40000))
