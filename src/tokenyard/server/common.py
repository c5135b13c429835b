"""What every route shares: server state and config, authentication, body limits,
generation slots, the prompt log."""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.requests import Request

from ..apis.errors import invalid_request, not_found
from ..apis.replay_state import ReplayState
from ..conversation import AgentHints
from ..faults import ApiError, Fault, JsonTooDeep
from ..sealing import ReasoningSeal
from ..settings import ServeSettings
from ..wire_json import loads
from . import metrics
from .admission import PriorityGate
from .offload import Offload
from .pipeline import Generation, Pipeline

# The declared defaults (settings.py): one place for each.
_SERVE = ServeSettings()


@dataclass
class ServerConfig:
    api_key: str | None = None
    enable_streaming_tool_dispatch: bool = _SERVE.enable_streaming_tool_dispatch
    max_concurrency: int = _SERVE.max_concurrency
    # Requests waiting for a generation slot beyond this are refused (overloaded).
    max_queue: int = 64
    # Seconds a request may wait for a generation slot before it is refused (overloaded).
    max_queue_wait: float = _SERVE.max_queue_wait
    max_body_bytes: int = 64 * 1024 * 1024
    keepalive_seconds: float = 10.0
    prompt_log: Path | None = None
    # Without an API key only loopback Host names are served; these are served too ("*": any).
    allowed_hosts: tuple[str, ...] = ()
    # Browser origins allowed to call the API cross-origin, with CORS ("*": any).
    allowed_origins: tuple[str, ...] = ()
    # The Codex catalog entry served ids inherit (`--codex-profile`); None: no Codex catalog.
    codex_profile: dict[str, Any] | None = None
    # The served model that judges tool calls for clients that ask (Claude Code's auto
    # mode); None: the model the request names.
    safeguards_model: str | None = None
    # Seconds one call's classification may take.
    safeguards_timeout: float = _SERVE.safeguards_timeout


@dataclass
class ServerState:
    # The first served model's pipeline: the default where a request names no model.
    pipeline: Pipeline
    seal: ReasoningSeal
    config: ServerConfig = field(default_factory=ServerConfig)
    slots: PriorityGate | None = None
    waiting: int = 0  # requests queued for a slot
    busy: int = 0  # slots held
    # Further served models (each with its own profile, tokenizer and engine).
    other_pipelines: tuple[Pipeline, ...] = ()
    replay: ReplayState = field(init=False)
    _by_id: dict[str, Pipeline] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.replay = ReplayState(self.seal)
        self._by_id = {}
        for pipeline in self.pipelines:
            for model_id in pipeline.model.ids:
                if model_id in self._by_id:
                    raise ValueError(f"model id {model_id!r} is served twice; each id names one model")
                self._by_id[model_id] = pipeline
        if self.config.safeguards_model and self.config.safeguards_model not in self._by_id:
            raise ValueError(f"the safeguards model {self.config.safeguards_model!r} is not served here")

    @property
    def pipelines(self) -> tuple[Pipeline, ...]:
        return (self.pipeline, *self.other_pipelines)

    def model_ids(self) -> tuple[str, ...]:
        """Every served id, aliases included, model by model."""
        return tuple(self._by_id)

    def pipeline_for(self, model: str | None) -> Pipeline:
        """The pipeline serving `model` (an id or alias); no model: the first one."""
        if not model:
            return self.pipeline
        found = self._by_id.get(model)
        if found is None:
            raise not_found(f"model: {model!r} is not served here; available: {', '.join(self.model_ids())}")
        return found

    def classifier_for(self, pipeline: Pipeline) -> Pipeline:
        """The pipeline that judges the tool calls of `pipeline`'s turns."""
        model = self.config.safeguards_model
        return self.pipeline_for(model) if model else pipeline

    def drain(self) -> None:
        """Graceful shutdown: every model's running streams end now."""
        for pipeline in self.pipelines:
            pipeline.drain()


def check_auth(request: Request, state: ServerState) -> None:
    key = state.config.api_key
    if not key:
        return
    given = request.headers.get("x-api-key")
    bearer = request.headers.get("authorization", "")
    if not given and bearer.lower().startswith("bearer "):
        given = bearer[7:].strip()
    if not given or not hmac.compare_digest(given.encode(), key.encode()):
        raise ApiError(Fault.AUTHENTICATION, "invalid x-api-key or bearer token")


# More tools than one request may carry: Anthropic's tool search takes a catalog of at
# most 10,000, and each tool costs validation and rendering time and memory.
MAX_TOOLS = 10_000


def check_tool_count(body: Any) -> None:
    """Refuse a body with more than `MAX_TOOLS` tools before it is validated."""
    tools = body.get("tools") if isinstance(body, dict) else None
    if not isinstance(tools, list):
        return
    # A Responses namespace holds its functions in `tools`: each counts.
    count = sum(len(t["tools"]) if isinstance(t, dict) and isinstance(t.get("tools"), list) else 1 for t in tools)
    if count > MAX_TOOLS:
        raise invalid_request(f"tools: {count:,} tools; at most {MAX_TOOLS:,} are served in one request", "tools")


async def read_json(request: Request, limit: int, offload: Offload | None = None) -> tuple[Any, int]:
    """The request's JSON body, at most `limit` bytes, and its size; a large body is
    parsed off the event loop when `offload` is given."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise ApiError(Fault.REQUEST_TOO_LARGE, f"request body exceeds {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(Fault.REQUEST_TOO_LARGE, f"request body exceeds {limit} bytes")
    try:
        value = await offload.run_if_large(len(body), loads, body) if offload is not None else loads(body)
        return value, len(body)
    except JsonTooDeep as error:
        raise invalid_request(f"request body is nested more than {error.limit} levels deep") from None
    except ValueError as error:
        raise ApiError(Fault.INVALID_JSON, f"request body is not valid JSON: {error}") from error


class Slot:
    """One generation slot, held from `acquire` to the first `release` (later ones do
    nothing), so every path that may end a request can release it safely."""

    def __init__(self, state: ServerState) -> None:
        assert state.slots is not None, "the app's lifespan makes the slots"
        self._state = state
        self._held = True
        state.busy += 1

    def release(self) -> None:
        if self._held:
            self._held = False
            self._state.busy -= 1
            self._state.slots.release()  # type: ignore[union-attr]  # checked in __init__


async def acquire_slot(state: ServerState, hints: AgentHints | None = None) -> Slot:
    """A generation slot, in agent-hint priority order, waited for at most max_queue_wait."""
    assert state.slots is not None
    if state.slots.locked() and state.waiting >= state.config.max_queue:
        raise overloaded("too many requests are waiting for the model; retry shortly")
    state.waiting += 1
    started = time.perf_counter()
    try:
        # Not asyncio.wait_for: up to Python 3.11 it swallows a cancellation that comes
        # as the slot is granted, so a request whose client just hung up would run.
        async with asyncio.timeout(state.config.max_queue_wait):
            await state.slots.acquire(hints)
    except TimeoutError:
        raise overloaded(
            f"no generation slot became free within {state.config.max_queue_wait:g} s; retry shortly"
        ) from None
    finally:
        state.waiting -= 1
    metrics.observe_queue_wait(time.perf_counter() - started)
    return Slot(state)


def overloaded(message: str) -> ApiError:
    return ApiError(Fault.OVERLOADED, message)


def log_prompt(state: ServerState, body: Any, generation: Generation) -> None:
    path = state.config.prompt_log
    if path is None:
        return
    record = {
        "time": time.time(),
        "process": os.getpid(),  # which process served it (`--processes N`)
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
