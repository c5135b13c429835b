"""What every API's routes share: server state and config, authentication, body
limits, validation, generation slots, the prompt log."""

from __future__ import annotations

import asyncio
import hmac
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request

from ..apis.errors import ApiError, invalid_request, not_found, validation_message
from ..apis.memory import ToolCallMemory
from ..engines.base import PromptTooLong
from ..prompting.template import TemplateError
from ..sealing import ReasoningSeal
from .pipeline import Generation, Pipeline


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
    # The Codex catalog entry served ids inherit (`--codex-profile`); None: no Codex catalog.
    codex_profile: dict[str, Any] | None = None


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


def check_auth(request: Request, state: ServerState) -> None:
    key = state.config.api_key
    if not key:
        return
    given = request.headers.get("x-api-key")
    bearer = request.headers.get("authorization", "")
    if not given and bearer.lower().startswith("bearer "):
        given = bearer[7:].strip()
    if not given or not hmac.compare_digest(given.encode(), key.encode()):
        raise ApiError(401, "authentication_error", "invalid x-api-key or bearer token")


async def read_json(request: Request, limit: int) -> Any:
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


def validate(model: type, body: Any) -> Any:
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise invalid_request(validation_message(error)) from error


async def acquire_slot(state: ServerState) -> None:
    assert state.slots is not None
    if state.slots.locked() and state.waiting >= state.config.max_queue:
        raise ApiError(529, "overloaded_error", "too many requests are waiting for the model; retry shortly")
    state.waiting += 1
    try:
        await state.slots.acquire()
    finally:
        state.waiting -= 1


def log_prompt(state: ServerState, body: Any, generation) -> None:
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
        "agent_id": generation.conversation.agent_id,
        "parent_agent_id": generation.conversation.parent_agent_id,
        "stream": generation.prefix.session if generation.prefix else None,
        "stream_kind": generation.prefix.kind if generation.prefix else None,
        "request_kind": generation.conversation.request_kind,
        "prefix_matched_tokens": generation.prefix.matched_tokens if generation.prefix else None,
        "prefix_stable": generation.prefix.stable if generation.prefix else None,
    }
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def start_generation(state: ServerState, conversation, call_id_prefix: str) -> Generation:
    try:
        return state.pipeline.start(conversation, call_id_prefix=call_id_prefix)
    except PromptTooLong as error:
        raise invalid_request(f"prompt is too long: {error}") from error
    except TemplateError as error:
        raise invalid_request(f"the model's chat template rejected this conversation: {error}") from error
