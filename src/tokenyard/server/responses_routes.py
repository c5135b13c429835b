"""OpenAI Responses route: `POST /v1/responses` (what Codex speaks), stateless.

There is no `GET /v1/responses/{id}`: nothing is stored, whatever `store` says.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..apis.errors import ApiError, openai_error_body
from ..apis.openai_responses.requests import (
    ENCRYPTED_REASONING,
    call_routes,
    codex_thread_key,
    custom_tool_names,
    response_echo,
    summary_mode,
    to_conversation,
)
from ..apis.openai_responses.schema import ResponsesRequest
from ..apis.openai_responses.stream import ResponseStream, new_id
from ..events import StreamError
from .common import ServerState, check_auth, log_prompt, read_json, start_generation, validate
from .sse import event_stream, run_to_end, sse

log = logging.getLogger("tokenyard.server.responses")


def openai_error(error: ApiError) -> JSONResponse:
    return JSONResponse(openai_error_body(error), status_code=error.status)


async def responses(request: Request) -> Response:
    state: ServerState = request.app.state.tokenyard
    try:
        check_auth(request, state)
        return await _respond(request, state)
    except ApiError as error:
        return openai_error(error)
    except Exception:  # never a bare 500 page
        log.exception("unhandled error in %s", request.url.path)
        return openai_error(ApiError(500, "api_error", "internal server error"))


async def _respond(request: Request, state: ServerState) -> Response:
    body = await read_json(request, state.config.max_body_bytes)
    wire = validate(ResponsesRequest, body)
    state.check_model(wire.model)
    headers = request.headers
    originator = headers.get("originator", "")
    conversation = to_conversation(
        wire,
        seal=state.seal,
        calls=state.calls,
        session_key=headers.get("session_id") or headers.get("session-id"),
        thread_key=codex_thread_key(headers),
        agent="codex" if originator.startswith("codex") else None,
    )
    generation = start_generation(state, conversation, "call_")
    log_prompt(state, body, generation)
    if conversation.request_kind is not None:
        log.info("session %s: a %s request", conversation.session_key, conversation.request_kind)
    encoder = ResponseStream(
        new_id("resp"),
        response_echo(wire),
        created_at=int(time.time()),
        seal=state.seal,
        calls=state.calls,
        custom_tools=custom_tool_names(wire),
        routes=call_routes(wire, conversation),
        summary=summary_mode(wire),
        include_encrypted_reasoning=ENCRYPTED_REASONING in (wire.include or []),
        dispatch=state.config.enable_streaming_tool_dispatch and wire.stream,
        clock=lambda: int(time.time()),
    )
    if not wire.stream:
        await run_to_end(state, generation, encoder.feed)
        return JSONResponse(encoder.response())
    return await event_stream(
        state,
        generation,
        lambda event: [_frame(data) for data in encoder.feed(event)],
        # Whatever broke, the client gets the API's own ending: response.failed.
        lambda message: [_frame(data) for data in encoder.feed(StreamError(message))],
        prologue=lambda: [_frame(data) for data in encoder.start()],
    )


def _frame(data: dict[str, Any]) -> bytes:
    return sse(data["type"], data)


def routes() -> list[Route]:
    return [Route("/v1/responses", responses, methods=["POST"])]
