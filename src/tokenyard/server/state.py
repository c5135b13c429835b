"""The server's state and config, shared by every route: the served pipelines by
model id, the reasoning seal and replay state, the generation slots."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..apis.errors import not_found
from ..apis.replay_state import ReplayState
from ..sealing import ReasoningSeal
from ..settings import ServeSettings
from .admission import PriorityGate
from .pipeline import Pipeline

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
