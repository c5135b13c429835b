"""The server's state and config, shared by every route: the served pipelines by
model id, the reasoning seal and replay state, the generation slots."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..apis.errors import not_found
from ..apis.replay_state import ReplayState
from ..sealing import ReasoningSeal
from ..settings import ServeSettings
from .admission import PriorityGate
from .pipeline import Pipeline


@dataclass
class ServerConfig(ServeSettings):
    """What the routes read: the serve settings as declared (settings.py), plus what
    they load and the limits no setting names."""

    # The Codex catalog entry `codex_profile` names, loaded; None: no Codex catalog.
    codex_catalog: dict[str, Any] | None = None
    # Requests waiting for a generation slot beyond this are refused (overloaded).
    max_queue: int = 64
    max_body_bytes: int = 64 * 1024 * 1024
    keepalive_seconds: float = 10.0


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
