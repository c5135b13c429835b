"""Anthropic Messages routes: `/v1/messages`, `/v1/messages/count_tokens`."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..apis.anthropic.requests import to_conversation
from ..apis.anthropic.schema import CountTokensRequest, MessagesRequest
from ..apis.anthropic.stream import MessageStream, error_event
from ..apis.errors import ApiError, invalid_request
from ..prompting.template import TemplateError
from .common import ServerState, check_auth, log_prompt, read_json, start_generation, validate
from .sse import KEEPALIVE_COMMENT, event_stream, run_to_end, sse

log = logging.getLogger("tokenyard.server.anthropic")


def anthropic_error(error: ApiError) -> JSONResponse:
    return JSONResponse(
        {"type": "error", "error": {"type": error.kind, "message": error.message}}, status_code=error.status
    )


def _anthropic_route(handler: Callable[[Request, ServerState], Any]) -> Callable:
    async def endpoint(request: Request) -> Response:
        state: ServerState = request.app.state.tokenyard
        try:
            check_auth(request, state)
            return await handler(request, state)
        except ApiError as error:
            return anthropic_error(error)
        except Exception:  # never a bare 500 page
            log.exception("unhandled error in %s", request.url.path)
            return anthropic_error(ApiError(500, "api_error", "internal server error"))

    return endpoint


async def messages(request: Request, state: ServerState) -> Response:
    body = await read_json(request, state.config.max_body_bytes)
    wire = validate(MessagesRequest, body)
    state.check_model(wire.model)
    conversation = to_conversation(
        wire,
        seal=state.seal,
        calls=state.calls,
        session_key=request.headers.get("x-claude-code-session-id"),
        agent="claude-code" if request.headers.get("x-claude-code-session-id") else None,
        agent_id=request.headers.get("x-claude-code-agent-id"),
        parent_agent_id=request.headers.get("x-claude-code-parent-agent-id"),
    )
    generation = start_generation(state, conversation, "toolu_")
    log_prompt(state, body, generation)
    encoder = MessageStream(
        f"msg_{secrets.token_hex(12)}",
        wire.model,
        seal=state.seal,
        calls=state.calls,
        dispatch=state.config.enable_streaming_tool_dispatch and wire.stream,
        show_thinking=not (wire.thinking and wire.thinking.display == "omitted"),
    )
    if not wire.stream:
        await run_to_end(state, generation, encoder.feed)
        return JSONResponse(encoder.message())
    return await event_stream(
        state,
        generation,
        lambda event: [sse(name, data) for name, data in encoder.feed(event)],
        lambda message: [sse(*error_event("api_error", message))],
        # Before message_start only an SSE comment is safe; after it, a ping.
        keepalive=lambda: sse("ping", {"type": "ping"}) if encoder.started else KEEPALIVE_COMMENT,
    )


async def count_tokens(request: Request, state: ServerState) -> Response:
    body = await read_json(request, state.config.max_body_bytes)
    wire = validate(CountTokensRequest, body)
    state.check_model(wire.model)
    conversation = to_conversation(wire, seal=state.seal, calls=state.calls)
    try:
        prompt = state.pipeline.render(conversation)
    except TemplateError as error:
        raise invalid_request(f"the model's chat template rejected this conversation: {error}") from error
    return JSONResponse({"input_tokens": len(prompt.token_ids)})


def routes() -> list[Route]:
    return [
        Route("/v1/messages", _anthropic_route(messages), methods=["POST"]),
        Route("/v1/messages/count_tokens", _anthropic_route(count_tokens), methods=["POST"]),
    ]
