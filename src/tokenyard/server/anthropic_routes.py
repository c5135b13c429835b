"""Anthropic Messages routes: `/v1/messages`, `/v1/messages/count_tokens`."""

from __future__ import annotations

import logging
import secrets
from typing import Any, AsyncIterator, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..apis.anthropic.requests import to_conversation
from ..apis.anthropic.schema import CountTokensRequest, MessagesRequest
from ..apis.anthropic.stream import MessageStream, error_event
from ..apis.errors import ApiError, invalid_request
from ..engines.base import EngineError
from ..events import StreamError
from ..prompting.template import TemplateError
from .common import ServerState, acquire_slot, check_auth, log_prompt, read_json, start_generation, validate
from .sse import sse, with_keepalive

log = logging.getLogger("tokenyard.server.anthropic")

_PING = object()


def anthropic_error(error: ApiError) -> JSONResponse:
    return JSONResponse({"type": "error", "error": {"type": error.kind, "message": error.message}}, status_code=error.status)


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
    await acquire_slot(state)
    if not wire.stream:
        try:
            async for event in generation.events():
                if isinstance(event, StreamError):
                    raise ApiError(500, event.kind, event.message)
                encoder.feed(event)
        finally:
            state.slots.release()  # type: ignore[union-attr]
        return JSONResponse(encoder.message())
    return StreamingResponse(
        _anthropic_sse(state, generation.events(), encoder),
        media_type="text/event-stream",
        headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
    )


async def _anthropic_sse(state: ServerState, events: AsyncIterator, encoder: MessageStream) -> AsyncIterator[bytes]:
    started = False
    try:
        async for event in with_keepalive(events, state.config.keepalive_seconds, lambda: _PING):
            if event is _PING:
                # Before message_start only an SSE comment is safe; after it, a ping.
                yield sse("ping", {"type": "ping"}) if started else b": keepalive\n\n"
                continue
            for name, data in encoder.feed(event):
                started = started or name == "message_start"
                yield sse(name, data)
    except (EngineError, TemplateError) as error:
        yield sse(*error_event("api_error", str(error)))
    except Exception:
        log.exception("stream failed")
        yield sse(*error_event("api_error", "internal server error"))
    finally:
        state.slots.release()  # type: ignore[union-attr]


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
