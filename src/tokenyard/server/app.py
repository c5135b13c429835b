"""The ASGI application: routes, authentication, limits, error envelopes.

The composition root. Each API's routes turn a request into a `Conversation`,
start it on the one pipeline, and encode the events back in that API's grammar;
nothing here talks to an engine directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..apis.anthropic.requests import to_conversation
from ..apis.anthropic.schema import CountTokensRequest, MessagesRequest
from ..apis.anthropic.stream import MessageStream, error_event
from ..apis.errors import ApiError, invalid_request, not_found, validation_message
from ..apis.memory import ToolCallMemory
from ..apis.models import anthropic_model, model_list, openai_model
from ..engines.base import EngineError, PromptTooLong
from ..events import StreamError
from ..prompting.template import TemplateError
from ..sealing import ReasoningSeal
from .pipeline import Pipeline
from .sse import sse, with_keepalive

log = logging.getLogger("tokenyard.server")

_PING = object()


@dataclass
class ServerConfig:
    api_key: str | None = None
    enable_streaming_tool_dispatch: bool = False
    max_concurrency: int = 4
    # Requests waiting for a generation slot beyond this are refused (overloaded).
    max_queue: int = 64
    max_body_bytes: int = 64 * 1024 * 1024
    keepalive_seconds: float = 10.0
    prompt_log: Path | None = None


@dataclass
class ServerState:
    pipeline: Pipeline
    seal: ReasoningSeal
    config: ServerConfig = field(default_factory=ServerConfig)
    calls: ToolCallMemory = field(default_factory=ToolCallMemory)
    slots: asyncio.Semaphore | None = None
    waiting: int = 0

    def model_ids(self) -> tuple[str, ...]:
        return self.pipeline.model.ids

    def check_model(self, model: str) -> None:
        if model not in self.model_ids():
            raise not_found(f"model: {model!r} is not served here; available: {', '.join(self.model_ids())}")


# ---- helpers ----------------------------------------------------------------------------


def _anthropic_error(error: ApiError) -> JSONResponse:
    return JSONResponse({"type": "error", "error": {"type": error.kind, "message": error.message}}, status_code=error.status)


def _check_auth(request: Request, state: ServerState) -> None:
    key = state.config.api_key
    if not key:
        return
    given = request.headers.get("x-api-key")
    bearer = request.headers.get("authorization", "")
    if not given and bearer.lower().startswith("bearer "):
        given = bearer[7:].strip()
    if not given or not hmac.compare_digest(given.encode(), key.encode()):
        raise ApiError(401, "authentication_error", "invalid x-api-key or bearer token")


async def _read_json(request: Request, limit: int) -> Any:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, "request_too_large", f"request body exceeds {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, "request_too_large", f"request body exceeds {limit} bytes")
    try:
        return json.loads(body)
    except ValueError as error:
        raise invalid_request(f"request body is not valid JSON: {error}") from error


def _validate(model: type, body: Any) -> Any:
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise invalid_request(validation_message(error)) from error


async def _acquire_slot(state: ServerState) -> None:
    assert state.slots is not None
    if state.slots.locked() and state.waiting >= state.config.max_queue:
        raise ApiError(529, "overloaded_error", "too many requests are waiting for the model; retry shortly")
    state.waiting += 1
    try:
        await state.slots.acquire()
    finally:
        state.waiting -= 1


def _log_prompt(state: ServerState, body: Any, generation) -> None:
    path = state.config.prompt_log
    if path is None:
        return
    record = {
        "time": time.time(),
        "request": body,
        "prompt_text": generation.prompt.text,
        "prompt_tokens": len(generation.prompt.token_ids),
        "preamble_stripped": generation.prompt.preamble_stripped,
        "session": generation.conversation.session_key,
        "prefix_matched_tokens": generation.prefix.matched_tokens if generation.prefix else None,
    }
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def _start(state: ServerState, conversation, call_id_prefix: str):
    try:
        return state.pipeline.start(conversation, call_id_prefix=call_id_prefix)
    except PromptTooLong as error:
        raise invalid_request(f"prompt is too long: {error}") from error
    except TemplateError as error:
        raise invalid_request(f"the model's chat template rejected this conversation: {error}") from error


# ---- Anthropic Messages -----------------------------------------------------------------


def _anthropic_route(handler: Callable[[Request, ServerState], Any]) -> Callable:
    async def endpoint(request: Request) -> Response:
        state: ServerState = request.app.state.tokenyard
        try:
            _check_auth(request, state)
            return await handler(request, state)
        except ApiError as error:
            return _anthropic_error(error)
        except Exception:  # never a bare 500 page
            log.exception("unhandled error in %s", request.url.path)
            return _anthropic_error(ApiError(500, "api_error", "internal server error"))

    return endpoint


async def messages(request: Request, state: ServerState) -> Response:
    body = await _read_json(request, state.config.max_body_bytes)
    wire = _validate(MessagesRequest, body)
    state.check_model(wire.model)
    conversation = to_conversation(
        wire,
        seal=state.seal,
        calls=state.calls,
        session_key=request.headers.get("x-claude-code-session-id"),
        agent="claude-code" if request.headers.get("x-claude-code-session-id") else None,
    )
    generation = _start(state, conversation, "toolu_")
    _log_prompt(state, body, generation)
    encoder = MessageStream(
        f"msg_{secrets.token_hex(12)}",
        wire.model,
        seal=state.seal,
        calls=state.calls,
        dispatch=state.config.enable_streaming_tool_dispatch and wire.stream,
        show_thinking=not (wire.thinking and wire.thinking.display == "omitted"),
    )
    await _acquire_slot(state)
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
    body = await _read_json(request, state.config.max_body_bytes)
    wire = _validate(CountTokensRequest, body)
    state.check_model(wire.model)
    conversation = to_conversation(wire, seal=state.seal, calls=state.calls)
    try:
        prompt = state.pipeline.render(conversation)
    except TemplateError as error:
        raise invalid_request(f"the model's chat template rejected this conversation: {error}") from error
    return JSONResponse({"input_tokens": len(prompt.token_ids)})


# ---- models -------------------------------------------------------------------------------


async def list_models(request: Request) -> Response:
    state: ServerState = request.app.state.tokenyard
    anthropic = "anthropic-version" in request.headers
    try:
        _check_auth(request, state)
    except ApiError as error:
        return _models_error(error, anthropic)
    created = state.pipeline.model.created
    return JSONResponse(model_list([(i, created) for i in state.model_ids()], anthropic))


async def get_model(request: Request) -> Response:
    state: ServerState = request.app.state.tokenyard
    anthropic = "anthropic-version" in request.headers
    model_id = request.path_params["model_id"]
    try:
        _check_auth(request, state)
        state.check_model(model_id)
    except ApiError as error:
        return _models_error(error, anthropic)
    created = state.pipeline.model.created
    return JSONResponse(anthropic_model(model_id, created) if anthropic else openai_model(model_id, created))


def _models_error(error: ApiError, anthropic: bool) -> JSONResponse:
    if anthropic:
        return _anthropic_error(error)
    kind = {"not_found_error": "invalid_request_error"}.get(error.kind, error.kind)
    code = {404: "model_not_found", 401: "invalid_api_key"}.get(error.status)
    return JSONResponse({"error": {"message": error.message, "type": kind, "param": None, "code": code}}, status_code=error.status)


async def health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def create_app(state: ServerState) -> Starlette:
    routes = [
        Route("/v1/messages", _anthropic_route(messages), methods=["POST"]),
        Route("/v1/messages/count_tokens", _anthropic_route(count_tokens), methods=["POST"]),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/v1/models/{model_id:path}", get_model, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        state.slots = asyncio.Semaphore(state.config.max_concurrency)
        await state.pipeline.engine.start()
        try:
            yield
        finally:
            await state.pipeline.engine.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.tokenyard = state
    return app
