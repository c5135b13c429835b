"""THE route handler: every API's generation endpoint is this one function driving
that API's spoke (apis/spoke.py); count_tokens, tokenize and the model list share
its guard. In order: auth, body, validation, model, start the generation, stream or
assemble; any failure on the way is the API's own error from its one table."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..apis.anthropic.spoke import SPOKE as ANTHROPIC
from ..apis.anthropic.spoke import parse_count_tokens
from ..apis.errors import ErrorTable, fault_of
from ..apis.hints import read_agent_hints, read_harness_headers
from ..apis.openai_chat.spoke import SPOKE as OPENAI_CHAT
from ..apis.openai_responses.spoke import SPOKE as OPENAI_RESPONSES
from ..apis.spoke import ParsedRequest, RequestContext, Spoke, StreamEncoder
from ..prompting.streams import inferred_session
from .intake import check_auth, check_tool_count, header_map, read_json
from .pipeline import Generation
from .prompt_log import log_prompt
from .safeguards import CallReviewer
from .sse import event_stream, run_to_end
from .state import ServerState

log = logging.getLogger("tokenyard.server")

# The status a response to a client that already hung up is logged with (never sent).
CLIENT_CLOSED_REQUEST = 499

Handler = Callable[[Request, ServerState], Awaitable[Response]]


def error_response(errors: ErrorTable, error: BaseException) -> JSONResponse:
    """Any exception as the API's envelope and status."""
    fault = fault_of(error)
    return JSONResponse(errors.body(fault), status_code=errors.status(fault), headers=errors.headers(fault))


def guarded(errors: ErrorTable, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint that authenticates, then runs `handler`; whatever it raises is
    answered from `errors` (never a bare 500 page)."""

    async def endpoint(request: Request) -> Response:
        state: ServerState = request.app.state.tokenyard
        try:
            check_auth(request, state)
            return await handler(request, state)
        except ClientDisconnect:  # an ordinary event, not a server fault
            log.info("the client went away while sending its request")
            return Response(status_code=CLIENT_CLOSED_REQUEST)
        except Exception as error:
            return error_response(errors, error)

    return endpoint


def context(headers: Mapping[str, str], state: ServerState) -> RequestContext:
    return RequestContext(headers, state.replay, state.config.enable_streaming_tool_dispatch)


async def start_generation(
    spoke: Spoke[Any], body: Any, size: int, headers: Mapping[str, str], state: ServerState
) -> tuple[ParsedRequest[Any], Generation, StreamEncoder]:
    """A request body (HTTP or a Responses WebSocket message) → its parsed request,
    its prepared generation and the API's encoder for its events."""
    await state.pipeline.offload.run_if_large(size, check_tool_count, body)
    ctx = context(headers, state)
    parsed = await state.pipeline.offload.run_if_large(size, spoke.parse, body, ctx)
    pipeline = state.pipeline_for(parsed.model)
    # The model's own view of the replay state: its calls' ids carry its JSON style.
    ctx = replace(ctx, replay=state.replay.for_model(pipeline.model.name))
    parsed.conversation.hints = read_agent_hints(body, headers)
    parsed.conversation.harness_headers = read_harness_headers(headers)
    if parsed.conversation.session_key is None and (session := inferred_session(parsed.conversation)):
        # A client that names no session (OpenClaw): its prefix is watched and routed all the same.
        parsed.conversation.session_key = session
    # Rendering and tokenizing run off the event loop (a small body's on it).
    generation = await pipeline.prepare(
        parsed.conversation, call_id_prefix=ctx.replay.call_id_prefix(spoke.call_id_prefix), body_bytes=size
    )
    if parsed.safeguards is not None:
        generation.review = CallReviewer(
            state.classifier_for(pipeline),
            parsed.conversation,
            parsed.safeguards,
            timeout=state.config.safeguards_timeout,
        )
    log_prompt(state, body, generation)
    if parsed.conversation.request_kind is not None:
        log.info("session %s: a %s request", parsed.conversation.session_key, parsed.conversation.request_kind)
    return parsed, generation, spoke.encoder(parsed, ctx)


def generate(spoke: Spoke[Any]) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint of one API's generation route."""

    async def handler(request: Request, state: ServerState) -> Response:
        body, size = await read_json(request, state.config.max_body_bytes, state.pipeline.offload)
        parsed, generation, encoder = await start_generation(spoke, body, size, header_map(request.scope), state)
        if parsed.stream:
            return await event_stream(state, generation, encoder)
        result = await run_to_end(state, generation, encoder, request.receive)
        if result is None:  # the client hung up: nothing reaches the wire (nginx's "client closed request")
            return Response(status_code=CLIENT_CLOSED_REQUEST)
        return JSONResponse(result)

    return guarded(spoke.errors, handler)


async def count_tokens(request: Request, state: ServerState) -> Response:
    """Anthropic's `/v1/messages/count_tokens`: the exact prompt generation would send
    (the named model's template and tokenizer)."""
    body, size = await read_json(request, state.config.max_body_bytes, state.pipeline.offload)
    await state.pipeline.offload.run_if_large(size, check_tool_count, body)
    parsed = await state.pipeline.offload.run_if_large(
        size, parse_count_tokens, body, context(header_map(request.scope), state)
    )
    return JSONResponse(
        {"input_tokens": await state.pipeline_for(parsed.model).count_prompt_tokens(parsed.conversation)}
    )


def routes() -> list[Route]:
    return [
        Route("/v1/messages", generate(ANTHROPIC), methods=["POST"]),
        Route("/v1/messages/count_tokens", guarded(ANTHROPIC.errors, count_tokens), methods=["POST"]),
        Route("/v1/chat/completions", generate(OPENAI_CHAT), methods=["POST"]),
        Route("/v1/responses", generate(OPENAI_RESPONSES), methods=["POST"]),
    ]
