"""OpenAI Chat Completions route: `/v1/chat/completions`, and the OpenAI error
envelope shared with the other OpenAI-shaped routes (tokenize)."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..apis.errors import ApiError, invalid_request, openai_error_body
from ..apis.hints import read_agent_hints
from ..apis.openai_chat.requests import parse_request, to_conversation
from ..apis.openai_chat.stream import ChatCompletionStream, error_chunk
from ..conversation import Conversation
from ..engines.base import PromptTooLong
from ..prompting.template import TemplateError
from .common import ServerState, check_auth, log_prompt, read_json
from .pipeline import Generation
from .sse import event_stream, run_to_end, sse

log = logging.getLogger("tokenyard.server.openai_chat")

# Clients that keep one conversation per session say so in this header.
SESSION_HEADER = "x-session-id"


class ContextLengthExceeded(ApiError):
    """OpenAI reports a prompt over the window with this code; clients (and the
    SDK's users) match on it to compact their history."""

    code = "context_length_exceeded"

    def __init__(self, error: PromptTooLong):
        super().__init__(400, "invalid_request_error", str(error), "messages")


def openai_error(error: ApiError) -> JSONResponse:
    body = openai_error_body(error)
    code = getattr(error, "code", None)
    if code:
        body["error"]["code"] = code
    return JSONResponse(body, status_code=error.status)


def openai_route(handler: Callable[[Request, ServerState], Any]) -> Callable:
    async def endpoint(request: Request) -> Response:
        state: ServerState = request.app.state.tokenyard
        try:
            check_auth(request, state)
            return await handler(request, state)
        except ApiError as error:
            return openai_error(error)
        except Exception:  # never a bare 500 page
            log.exception("unhandled error in %s", request.url.path)
            return openai_error(ApiError(500, "api_error", "internal server error"))

    return endpoint


def start(state: ServerState, conversation: Conversation) -> Generation:
    try:
        return state.pipeline.start(conversation, call_id_prefix="call_")
    except PromptTooLong as error:
        raise ContextLengthExceeded(error) from error
    except TemplateError as error:
        raise invalid_request(f"the model's chat template rejected this conversation: {error}", "messages") from error


async def chat_completions(request: Request, state: ServerState) -> Response:
    body = await read_json(request, state.config.max_body_bytes)
    wire = parse_request(body)
    state.check_model(wire.model)
    conversation = to_conversation(wire, session_key=request.headers.get(SESSION_HEADER))
    conversation.hints = read_agent_hints(body, request.headers)
    generation = start(state, conversation)
    log_prompt(state, body, generation)
    encoder = ChatCompletionStream(
        f"chatcmpl-{secrets.token_hex(12)}",
        wire.model,
        int(time.time()),
        include_usage=bool(wire.stream and wire.stream_options and wire.stream_options.include_usage),
        dispatch=state.config.enable_streaming_tool_dispatch and wire.stream,
    )
    if not wire.stream:
        await run_to_end(state, generation, encoder.feed)
        return JSONResponse(encoder.completion())
    return await event_stream(
        state,
        generation,
        lambda event: [sse(name, data) for name, data in encoder.feed(event)],
        lambda message: [sse(None, error_chunk("api_error", message))],
        epilogue=sse(None, "[DONE]"),
    )


def routes() -> list[Route]:
    return [Route("/v1/chat/completions", openai_route(chat_completions), methods=["POST"])]
