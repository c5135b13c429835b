"""vLLM's `/v1/tokenize` and `/v1/detokenize`.

The chat form goes through the Chat Completions request mapper and the pipeline's
own renderer, so its `count` is exactly the prompt a chat completion with the same
body would send to the engine. A request that names a model uses that model's tokenizer
and template; one that names none, the first served model's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..apis.errors import invalid_request, validate
from ..apis.openai_chat.errors import ERRORS
from ..apis.openai_chat.requests import supported, to_conversation
from ..apis.openai_chat.schema import ChatCompletionRequest
from .intake import check_tool_count, read_json
from .offload import json_in_pieces
from .pipeline import Pipeline
from .routes import guarded
from .state import ServerState


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class TokenizeTextRequest(_Wire):
    model: str | None = None
    prompt: str
    add_special_tokens: bool = True
    return_token_strs: bool = False


class TokenizeChatRequest(ChatCompletionRequest):
    """A chat completion body (model optional) plus the template switches."""

    model: str = ""
    add_generation_prompt: bool = True
    return_token_strs: bool = False


class DetokenizeRequest(_Wire):
    model: str | None = None
    tokens: list[int]


# Bodies longer than this many bytes per token of the largest served window hold
# more than any window: a list of ids (`151643, `: 8 bytes an id) or a prompt of
# over 16 bytes a token. Bounds the time and memory tokenize and detokenize take.
BYTES_PER_TOKEN = 16


def body_limit(state: ServerState) -> int:
    window = max(p.engine.info().max_model_len for p in state.pipelines)
    return min(state.config.max_body_bytes, BYTES_PER_TOKEN * window + 64 * 1024)


async def tokenize(request: Request, state: ServerState) -> Response:
    body, size = await read_json(request, body_limit(state), state.pipeline.offload)
    await state.pipeline.offload.run_if_large(size, check_tool_count, body)
    if isinstance(body, dict) and "messages" in body:
        chat = await state.pipeline.offload.run_if_large(size, _chat_request, body)
        pipeline = state.pipeline_for(chat.model)
        conversation = to_conversation(chat.model_copy(update={"model": chat.model or pipeline.model.name}))
        prompt = await pipeline.prepare_prompt(conversation, add_generation_prompt=chat.add_generation_prompt)
        ids = prompt.token_ids
        token_strs = chat.return_token_strs
    else:
        if isinstance(body, dict) and "prompt" not in body:
            raise invalid_request("tokenize needs `prompt` (text) or `messages` (chat)", "prompt")
        text = validate(TokenizeTextRequest, body)
        pipeline = state.pipeline_for(text.model)
        ids = await pipeline.offload.run(pipeline.model.tokenizer.encode, text.prompt, text.add_special_tokens)
        token_strs = text.return_token_strs
    window = pipeline.engine.info().max_model_len
    # Building a long answer (a token string per id, the JSON text) is CPU work too.
    return await pipeline.offload.run_if_large(len(ids) * 8, _tokenized, pipeline, ids, window, token_strs)


def _chat_request(body: Any) -> TokenizeChatRequest:
    return supported(validate(TokenizeChatRequest, body))


def _tokenized(pipeline: Pipeline, ids: list[int], window: int, token_strs: bool) -> Response:
    out: dict[str, Any] = {"count": len(ids), "max_model_len": window, "tokens": ids}
    if token_strs:
        out["token_strs"] = [pipeline.model.tokenizer.backend.id_to_token(i) for i in ids]
    return Response(json_in_pieces(out), media_type="application/json")


async def detokenize(request: Request, state: ServerState) -> Response:
    body, size = await read_json(request, body_limit(state), state.pipeline.offload)
    model = body.get("model") if isinstance(body, dict) else None
    pipeline = state.pipeline_for(model if isinstance(model, str) else None)
    return await pipeline.offload.run_if_large(size, _detokenized, pipeline, body)


def _detokenized(pipeline: Pipeline, body: Any) -> Response:
    wire = validate(DetokenizeRequest, body)
    tokenizer = pipeline.model.tokenizer
    window = pipeline.engine.info().max_model_len
    if len(wire.tokens) > window:
        message = f"tokens: {len(wire.tokens):,} ids, more than this model's window of {window:,} tokens"
        raise invalid_request(message, "tokens")
    bad = next((t for t in wire.tokens if not 0 <= t < tokenizer.vocab_size), None)
    if bad is not None:
        raise invalid_request(
            f"tokens: {bad} is not a token id of this model (0..{tokenizer.vocab_size - 1})", "tokens"
        )
    return Response(json_in_pieces({"prompt": tokenizer.decode(wire.tokens)}), media_type="application/json")


def routes() -> list[Route]:
    return [
        Route("/v1/tokenize", guarded(ERRORS, tokenize), methods=["POST"]),
        Route("/v1/detokenize", guarded(ERRORS, detokenize), methods=["POST"]),
    ]
